/**
 * Storage through the client on the real stack: `client.storage.from(bucket)`
 * as signed-in users under the app's RLS policies on `storage.objects` (the
 * project id given, or read from the user's token), public and signed URLs,
 * and the management client's `storage.objects` with the operator's rights —
 * each call once succeeding and once refused.
 */
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createClient, createManagementClient, memoryStorage, type BaseplaneClient, type ManagementClient } from '../src/index';
import { bearer, call } from '../../deploy/test/http';
import { appClient, clientProject, deadBaseUrl, newEmail, PASSWORD, recordingFetch, type ClientProject } from './client-fixtures';

let p: ClientProject;
let m: ManagementClient;
let alice: BaseplaneClient;
let aliceId: string;
let bob: BaseplaneClient;

/** The path and query of a URL the service handed out (its host is the stack's PUBLIC_URL). */
const local = (url: string) => {
  const parsed = new URL(url);
  return new URL(parsed.pathname + parsed.search, inject('baseUrl')).href;
};
const text = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
};

beforeAll(async () => {
  p = await clientProject('client storage');
  m = createManagementClient(inject('baseUrl'), { accessToken: p.operator.token });
  expect((await m.storage.buckets.create(p.project.id, { name: 'avatars' })).error).toBeNull();
  expect((await m.storage.buckets.create(p.project.id, { name: 'docs' })).error).toBeNull();
  expect((await m.storage.buckets.create(p.project.id, { name: 'pics', public: true, allowedMimeTypes: ['image/*'] })).error).toBeNull();
  // The policies an app writes: each user reads and writes only under avatars/<their id>/.
  const policies = await call('POST', '/api/sql/execute', {
    headers: bearer(p.operator.token),
    body: {
      projectId: p.project.id,
      query: `
        create policy own_insert on storage.objects for insert to authenticated with check (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
        create policy own_select on storage.objects for select to authenticated using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
        create policy own_update on storage.objects for update to authenticated using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
        create policy own_delete on storage.objects for delete to authenticated using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);`,
    },
  });
  expect(policies.status, policies.text).toBe(200);
  // Alice's client knows the project id; Bob's finds it in his token.
  alice = appClient(p, { projectId: p.project.id });
  bob = appClient(p);
  aliceId = (await alice.auth.signUp({ email: newEmail('alice'), password: PASSWORD })).data!.user.id;
  expect((await bob.auth.signUp({ email: newEmail('bob'), password: PASSWORD })).error).toBeNull();
});

describe('a signed-in user under RLS', () => {
  it('uploads into their own folder, and is refused anyone else’s with 403', async () => {
    const mine = await alice.storage.from('avatars').upload(`${aliceId}/me.txt`, 'alice here', { contentType: 'text/plain' });
    expect(mine.error).toBeNull();
    expect(mine.data).toMatchObject({ path: `${aliceId}/me.txt`, size: 10, contentType: 'text/plain', owner: aliceId });
    const theirs = await bob.storage.from('avatars').upload(`${aliceId}/bob.txt`, 'bob was here');
    expect(theirs).toMatchObject({ data: null, error: { code: '42501', status: 403 } });
  });

  it('replaces an object only with upsert (409 already_exists without)', async () => {
    const bucket = alice.storage.from('avatars');
    expect((await bucket.upload(`${aliceId}/me.txt`, 'again')).error).toMatchObject({ code: 'already_exists', status: 409 });
    const replaced = await bucket.upload(`${aliceId}/me.txt`, new Blob(['alice, again'], { type: 'text/plain' }), { upsert: true });
    expect(replaced.data).toMatchObject({ size: 12, contentType: 'text/plain' });
  });

  it('downloads their object, and a byte range; another user gets 404', async () => {
    const whole = await alice.storage.from('avatars').download(`${aliceId}/me.txt`);
    expect(whole.error).toBeNull();
    expect(whole.data).toBeInstanceOf(Blob);
    expect(await whole.data!.text()).toBe('alice, again');
    expect(await (await alice.storage.from('avatars').download(`${aliceId}/me.txt`, { range: 'bytes=0-4' })).data!.text()).toBe('alice');
    expect((await bob.storage.from('avatars').download(`${aliceId}/me.txt`)).error).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('lists what they may see; an unknown bucket is 404', async () => {
    const listed = await alice.storage.from('avatars').list(`${aliceId}/`);
    expect(listed.data?.objects.map((o) => o.path)).toEqual([`${aliceId}/me.txt`]);
    expect((await bob.storage.from('avatars').list(`${aliceId}/`)).data).toEqual({ objects: [], prefixes: [] });
    expect((await alice.storage.from('nope').list()).error).toMatchObject({ status: 404 });
  });

  it('signs a URL anyone may read until it expires; an object they cannot see is 404', async () => {
    const signed = await alice.storage.from('avatars').createSignedUrl(`${aliceId}/me.txt`, 60);
    expect(signed.error).toBeNull();
    expect(new Date(signed.data!.expiresAt).getTime()).toBeGreaterThan(Date.now());
    expect(await text(local(signed.data!.url))).toEqual({ status: 200, body: 'alice, again' });
    expect((await bob.storage.from('avatars').createSignedUrl(`${aliceId}/me.txt`)).error).toMatchObject({ status: 404 });
  });

  it('removes their objects; removing anyone else’s removes nothing', async () => {
    await alice.storage.from('avatars').upload(`${aliceId}/old.txt`, 'old');
    expect((await bob.storage.from('avatars').remove([`${aliceId}/old.txt`])).data).toEqual({ deleted: [] });
    expect((await alice.storage.from('avatars').remove([`${aliceId}/old.txt`])).data).toEqual({ deleted: [`${aliceId}/old.txt`] });
  });

  it('removes nothing from an empty list, without a request (as supabase-js; the server would answer 400)', async () => {
    const { fetch, requests } = recordingFetch();
    const client = appClient(p, { projectId: p.project.id, fetch });
    expect(await client.storage.from('avatars').remove([])).toEqual({ data: { deleted: [] }, error: null });
    expect(requests).toEqual([]);
  });
});

describe('upload bodies', () => {
  it('refuses a body it cannot send whole (a web or Node stream, a plain object) with invalid_request, without a request', async () => {
    const recorder = recordingFetch();
    const carol = appClient(p, { projectId: p.project.id, fetch: recorder.fetch });
    const carolId = (await carol.auth.signUp({ email: newEmail('carol'), password: PASSWORD })).data!.user.id;
    const bucket = carol.storage.from('avatars');
    const sent = recorder.requests.length;
    const webStream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('streamed'));
        controller.close();
      },
    });
    for (const body of [webStream, Readable.from(['streamed']), { text: 'streamed' }, 42]) {
      const answer = await bucket.upload(`${carolId}/streamed.txt`, body as never);
      expect(answer).toEqual({ data: null, error: { code: 'invalid_request', message: expect.stringContaining('Blob'), details: null, hint: expect.any(String), status: 0 } });
    }
    expect((await m.storage.objects.upload(p.project.id, 'docs', 'streamed.txt', webStream as never)).error).toMatchObject({ code: 'invalid_request', status: 0 });
    expect(recorder.requests.length).toBe(sent);
    expect((await bucket.list(`${carolId}/`)).data).toEqual({ objects: [], prefixes: [] });
  });

  it('sends a string as text/plain;charset=UTF-8 (stored as text/plain), bytes as application/octet-stream', async () => {
    const bucket = alice.storage.from('avatars');
    expect((await bucket.upload(`${aliceId}/words.txt`, 'plain words')).data).toMatchObject({ size: 11, contentType: 'text/plain' });
    const downloaded = await bucket.download(`${aliceId}/words.txt`);
    expect(downloaded.data!.type).toBe('text/plain');
    expect(await downloaded.data!.text()).toBe('plain words');
    expect((await bucket.upload(`${aliceId}/bytes.bin`, new Uint8Array([1, 2]))).data).toMatchObject({ size: 2, contentType: 'application/octet-stream' });
    expect((await bucket.remove([`${aliceId}/words.txt`, `${aliceId}/bytes.bin`])).error).toBeNull();
  });
});

describe('public URLs', () => {
  it('builds the public address of an object of a public bucket, which serves it without a key', async () => {
    expect((await m.storage.objects.upload(p.project.id, 'pics', 'cat.png', new Uint8Array([1, 2, 3]), { contentType: 'image/png' })).error).toBeNull();
    const { data, error } = alice.storage.from('pics').getPublicUrl('cat.png');
    expect(error).toBeNull();
    expect(data!.publicUrl).toBe(`${inject('baseUrl')}/storage/v1/object/public/${p.project.id}/pics/cat.png`);
    const response = await fetch(data!.publicUrl);
    expect(response.status).toBe(200);
    expect([...new Uint8Array(await response.arrayBuffer())]).toEqual([1, 2, 3]);
    expect((await fetch(alice.storage.from('docs').getPublicUrl('cat.png').data!.publicUrl)).status).toBe(404);
  });

  it('needs the project id: given, or from a signed-in user’s token', async () => {
    const anonymous = appClient(p);
    expect(anonymous.storage.from('pics').getPublicUrl('cat.png').error).toMatchObject({ code: 'project_id_required', status: 0 });
    expect((await anonymous.storage.from('pics').list()).error).toMatchObject({ code: 'project_id_required', status: 0 });
    expect(bob.storage.from('pics').getPublicUrl('a/b c.png').data!.publicUrl).toBe(`${inject('baseUrl')}/storage/v1/object/public/${p.project.id}/pics/a/b%20c.png`);
  });

  it('knows the project of a session stored in a synchronous storage at once, before it has loaded', async () => {
    const storage = memoryStorage();
    expect((await appClient(p, { auth: { storage } }).auth.signUp({ email: newEmail(), password: PASSWORD })).error).toBeNull();
    const next = appClient(p, { auth: { storage } });
    expect(next.storage.from('pics').getPublicUrl('cat.png')).toEqual({ data: { publicUrl: `${inject('baseUrl')}/storage/v1/object/public/${p.project.id}/pics/cat.png` }, error: null });
  });
});

describe('the management client’s objects', () => {
  it('uploads, lists, downloads, signs and removes with the operator’s rights', async () => {
    const id = p.project.id;
    const uploaded = await m.storage.objects.upload(id, 'docs', 'reports/q1.txt', 'quarterly', { contentType: 'text/plain' });
    expect(uploaded.data).toMatchObject({ path: 'reports/q1.txt', size: 9, owner: null });
    expect((await m.storage.objects.list(id, 'docs', '')).data).toEqual({ objects: [], prefixes: ['reports/'] });
    expect((await m.storage.objects.list(id, 'docs', 'reports/', { limit: 10 })).data?.objects.map((o) => o.path)).toEqual(['reports/q1.txt']);
    expect(await (await m.storage.objects.download(id, 'docs', 'reports/q1.txt')).data!.text()).toBe('quarterly');
    const signed = await m.storage.objects.signedUrl(id, 'docs', 'reports/q1.txt', 30);
    expect(await text(local(signed.data!.url))).toEqual({ status: 200, body: 'quarterly' });
    expect((await m.storage.objects.remove(id, 'docs', ['reports/q1.txt'])).data).toEqual({ deleted: ['reports/q1.txt'] });
  });

  it('refuses what is not there (404), a type the bucket does not take (400) and an anon key on the management client (401)', async () => {
    const id = p.project.id;
    expect((await m.storage.objects.download(id, 'docs', 'missing.txt')).error).toMatchObject({ code: 'not_found', status: 404 });
    expect((await m.storage.objects.signedUrl(id, 'docs', 'missing.txt')).error).toMatchObject({ status: 404 });
    expect((await m.storage.objects.list(id, 'nope')).error).toMatchObject({ status: 404 });
    expect((await m.storage.objects.upload(id, 'pics', 'notes.txt', 'text', { contentType: 'text/plain' })).error).toMatchObject({ code: 'mime_type_not_allowed', status: 400 });
    expect((await m.storage.objects.remove(id, 'docs', [])).error).toMatchObject({ status: 400 });
    const anonymous = createManagementClient(inject('baseUrl'));
    expect((await anonymous.storage.objects.list(id, 'docs')).error).toMatchObject({ status: 401 });
  });
});

it('resolves a storage request that gets no answer as network_error, status 0', async () => {
  const offline = createClient(await deadBaseUrl(), p.project.anonKey, { projectId: p.project.id });
  expect(await offline.storage.from('docs').list()).toMatchObject({ data: null, error: { code: 'network_error', status: 0 } });
});

/**
 * Reading storage objects end to end over HTTP through the gateway: listing by
 * prefix with folders, downloads with their stored type and etag, ranges and
 * conditional requests, signed URLs (tampered, misused, expired) and the public
 * URL of a public bucket.
 */
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { objectKey } from '@baseplane/contracts/object-store';
import { call } from '../../deploy/test/http';
import { fetchBytes, local, objects, operator, p, store, storedKeyOf, tenant, upload, useStorageApp } from './storage-objects-fixtures';

useStorageApp();

describe('listing', () => {
  beforeAll(async () => {
    for (const path of ['tree/a.txt', 'tree/sub/b.txt', 'tree/sub/c.txt', 'tree/z.txt', 'tree/other/d.txt', 'treetop.txt']) {
      const answer = await upload('docs', path, path, operator());
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    }
  });

  it('shows the objects directly under a prefix and the folders below it', async () => {
    const answer = await call('GET', `${objects('docs')}?prefix=tree/`, { headers: operator() });
    expect(answer.status).toBe(200);
    expect(answer.body.objects.map((o: any) => o.path)).toEqual(['tree/a.txt', 'tree/z.txt']);
    expect(answer.body.prefixes).toEqual(['tree/other/', 'tree/sub/']);
    expect(answer.body.objects[0]).toEqual({ path: 'tree/a.txt', size: 10, contentType: 'text/plain', etag: expect.any(String), updatedAt: expect.any(String), owner: null });
  });

  it('takes a prefix that ends mid-name, as S3 does', async () => {
    const answer = await call('GET', `${objects('docs')}?prefix=tree`, { headers: operator() });
    expect(answer.body.objects.map((o: any) => o.path)).toEqual(['treetop.txt']);
    expect(answer.body.prefixes).toEqual(['tree/']);
  });

  it('pages folders and objects together with limit and offset', async () => {
    const first = await call('GET', `${objects('docs')}?prefix=tree/&limit=3`, { headers: operator() });
    const rest = await call('GET', `${objects('docs')}?prefix=tree/&limit=3&offset=3`, { headers: operator() });
    const names = (page: any) => [...page.objects.map((o: any) => o.path), ...page.prefixes].sort();
    expect(names(first.body)).toEqual(['tree/a.txt', 'tree/other/', 'tree/sub/']);
    expect(names(rest.body)).toEqual(['tree/z.txt']);
  });

  it('refuses a bad limit and an unknown bucket', async () => {
    expect((await call('GET', `${objects('docs')}?limit=5000`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', `${objects('docs')}?limit=abc`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', objects('nope'), { headers: operator() })).status).toBe(404);
  });
});

describe('downloading', () => {
  const body = '0123456789abcdefghij';
  beforeAll(async () => {
    expect((await upload('docs', 'digits.txt', body, operator(), { type: 'text/plain; charset=utf-8' })).status).toBe(201);
  });

  it('answers the bytes with their stored content type and etag', async () => {
    const answer = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, operator());
    expect(answer.status).toBe(200);
    expect(answer.bytes.toString()).toBe(body);
    // The multipart parser (busboy) reads the part's type without its parameters.
    expect(answer.headers.get('content-type')).toBe('text/plain');
    expect(answer.headers.get('accept-ranges')).toBe('bytes');
    expect(answer.headers.get('etag')).toMatch(/^".+"$/);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('honours Range: a span, an open end and a suffix (206), and one past the end (416)', async () => {
    const span = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=2-5' });
    expect(span.status).toBe(206);
    expect(span.bytes.toString()).toBe('2345');
    expect(span.headers.get('content-range')).toBe('bytes 2-5/20');
    const open = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=15-' });
    expect(open.bytes.toString()).toBe('fghij');
    const suffix = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=-3' });
    expect(suffix.bytes.toString()).toBe('hij');
    const past = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=50-60' });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */20');
  });

  it('takes a Range position of more digits than a number holds: an end past the object means its rest, a start past it 416', async () => {
    // Such an end reached S3 as 1e+21 (or past 64 bits); the server ignored the range and the whole object was served as the span.
    for (const range of ['bytes=1-99999999999999999999', 'bytes=1-100000000000000000000000', 'bytes=1-9007199254740993']) {
      const answer = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range });
      expect({ status: answer.status, range: answer.headers.get('content-range'), body: answer.bytes.toString() }, range)
        .toEqual({ status: 206, range: 'bytes 1-19/20', body: body.slice(1) });
    }
    const suffix = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=-100000000000000000000000' });
    expect({ status: suffix.status, range: suffix.headers.get('content-range'), body: suffix.bytes.toString() }).toEqual({ status: 206, range: 'bytes 0-19/20', body });
    const start = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=100000000000000000000000-' });
    expect({ status: start.status, range: start.headers.get('content-range') }).toEqual({ status: 416, range: 'bytes */20' });
  });

  it('answers HEAD with the headers a GET has (its length too) and no body, at the download, public and signed URLs', async () => {
    const signed = await call('GET', `${objects('docs')}/url?path=digits.txt`, { headers: operator() });
    expect((await upload('pics', 'head.png', Buffer.alloc(7, 1), operator(), { type: 'image/png' })).status).toBe(201);
    for (const [url, headers, length] of [
      [`${objects('docs')}/download?path=digits.txt`, operator(), '20'],
      [local(signed.body.url), {}, '20'],
      [`/storage/v1/object/public/${p.project.id}/pics/head.png`, {}, '7'],
    ] as const) {
      const response = await fetch(new URL(url, inject('baseUrl')), { method: 'HEAD', headers });
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-length'), url).toBe(length);
      expect(response.headers.get('etag'), url).toMatch(/^".+"$/);
      expect((await response.arrayBuffer()).byteLength).toBe(0);
    }
    const ranged = await fetch(new URL(`${objects('docs')}/download?path=digits.txt`, inject('baseUrl')), { method: 'HEAD', headers: { ...operator(), range: 'bytes=2-5' } });
    expect([ranged.status, ranged.headers.get('content-length'), ranged.headers.get('content-range')]).toEqual([206, '4', 'bytes 2-5/20']);
  });

  it('answers a conditional GET whose copy is current with 304 and no body, and a changed object whole', async () => {
    expect((await upload('docs', 'cached.txt', 'first', operator())).status).toBe(201);
    const url = `${objects('docs')}/download?path=cached.txt`;
    const first = await fetchBytes(url, operator());
    const etag = first.headers.get('etag')!;
    const lastModified = first.headers.get('last-modified')!;
    const validatorSets: Record<string, string>[] = [{ 'if-none-match': etag }, { 'if-none-match': `"other", W/${etag}` }, { 'if-none-match': '*' }, { 'if-modified-since': lastModified }];
    for (const validators of validatorSets) {
      const again = await fetchBytes(url, { ...operator(), ...validators });
      expect([again.status, again.bytes.length, again.headers.get('etag')], JSON.stringify(validators)).toEqual([304, 0, etag]);
      expect(again.headers.get('cache-control')).toBe('private, no-cache');
    }
    // If-None-Match decides when both are sent.
    expect((await fetchBytes(url, { ...operator(), 'if-none-match': '"other"', 'if-modified-since': lastModified })).status).toBe(200);
    expect((await fetchBytes(url, { ...operator(), 'if-modified-since': new Date(Date.parse(lastModified) - 1000).toUTCString() })).status).toBe(200);
    expect((await upload('docs', 'cached.txt', 'second', operator(), { upsert: true })).status).toBe(201);
    const changed = await fetchBytes(url, { ...operator(), 'if-none-match': etag });
    expect([changed.status, changed.bytes.toString()]).toEqual([200, 'second']);
    // The caller's rights are checked first: a stranger learns nothing from a matching tag.
    expect((await fetchBytes(url, { ...p.anon, 'if-none-match': '*' })).status).toBe(404);
  });

  it('honours If-Range at the download, signed and public URLs: the range for the current tag or date, the whole object otherwise', async () => {
    expect((await upload('docs', 'resumed.txt', body, operator())).status).toBe(201);
    expect((await upload('pics', 'resumed.png', body, operator(), { type: 'image/png' })).status).toBe(201);
    const signed = await call('GET', `${objects('docs')}/url?path=resumed.txt`, { headers: operator() });
    for (const [url, headers] of [
      [`${objects('docs')}/download?path=resumed.txt`, operator()],
      [local(signed.body.url), {}],
      [`/storage/v1/object/public/${p.project.id}/pics/resumed.png`, {}],
    ] as const) {
      const first = await fetchBytes(url, headers);
      const etag = first.headers.get('etag')!;
      const lastModified = first.headers.get('last-modified')!;
      const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
      const answers = async (validators: Record<string, string>) => {
        const answer = await fetchBytes(url, { ...headers, ...validators });
        return [answer.status, answer.bytes.toString(), answer.headers.get('content-range')];
      };
      const span = [206, '2345', 'bytes 2-5/20'];
      const whole = [200, body, null];
      const cases: [Record<string, string>, unknown[]][] = [
        [{ range: 'bytes=2-5', 'if-range': etag }, span],
        [{ range: 'bytes=2-5', 'if-range': lastModified }, span],
        // A weak tag never matches, even of this very object; another tag or an earlier date names another version.
        [{ range: 'bytes=2-5', 'if-range': `W/${etag}` }, whole],
        [{ range: 'bytes=2-5', 'if-range': '"other"' }, whole],
        [{ range: 'bytes=2-5', 'if-range': earlier }, whole],
        // A range that cannot be satisfied is set aside too when If-Range does not hold: 200, not 416.
        [{ range: 'bytes=50-60', 'if-range': '"other"' }, whole],
        [{ range: 'bytes=50-60', 'if-range': etag }, [416, expect.any(String), 'bytes */20']],
        // If-None-Match is evaluated first (RFC 9110 §13.2.2): a current copy is 304 whatever If-Range says.
        [{ range: 'bytes=2-5', 'if-range': '"other"', 'if-none-match': etag }, [304, '', null]],
        [{ range: 'bytes=2-5', 'if-range': etag, 'if-none-match': '"other"' }, span],
        // Without a Range, If-Range means nothing.
        [{ 'if-range': '"other"' }, whole],
      ];
      for (const [validators, expected] of cases) {
        expect(await answers(validators), `${url} ${JSON.stringify(validators)}`).toEqual(expected);
      }
    }
    // Replaced, the object no longer answers a range to its old tag: the new bytes come whole.
    const url = `${objects('docs')}/download?path=resumed.txt`;
    const oldTag = (await fetchBytes(url, operator())).headers.get('etag')!;
    expect((await upload('docs', 'resumed.txt', 'replaced, twenty byt', operator(), { upsert: true })).status).toBe(201);
    const replaced = await fetchBytes(url, { ...operator(), range: 'bytes=2-5', 'if-range': oldTag });
    expect([replaced.status, replaced.bytes.toString()]).toEqual([200, 'replaced, twenty byt']);
  });

  it('answers 404 for an object that does not exist', async () => {
    const answer = await call('GET', `${objects('docs')}/download?path=missing.txt`, { headers: operator() });
    expect(answer.status).toBe(404);
    expect(answer.body.code).toBe('not_found');
  });
});

describe('signed and public URLs', () => {
  beforeAll(async () => {
    expect((await upload('docs', 'secret/plan.txt', 'the plan', operator())).status).toBe(201);
    // Another object, which a signed URL's token must not open.
    expect((await upload('docs', 'notes.txt', 'not in the plan', operator())).status).toBe(201);
    expect((await upload('pics', 'cat.png', Buffer.from([1, 2, 3]), operator(), { type: 'image/png' })).status).toBe(201);
  });

  it('hands out a signed URL that reads the object without any key, until it expires', async () => {
    const signed = await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=60`, { headers: operator() });
    expect(signed.status).toBe(200);
    expect(signed.body.url).toContain(`/storage/v1/object/sign/${p.project.id}/docs/secret/plan.txt?token=`);
    expect(Date.parse(signed.body.expiresAt) - Date.now()).toBeGreaterThan(50_000);
    const read = await fetchBytes(local(signed.body.url));
    expect(read.status).toBe(200);
    expect(read.bytes.toString()).toBe('the plan');
    const ranged = await fetchBytes(local(signed.body.url), { range: 'bytes=4-' });
    expect(ranged.bytes.toString()).toBe('plan');
  });

  it('refuses a tampered token, a token used for another object, and an expired one', async () => {
    // Four seconds: the refusals below must come before it expires, on a slow machine too (one second was not always enough).
    const signed = await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=4`, { headers: operator() });
    const url = local(signed.body.url);
    const token = new URL(signed.body.url).searchParams.get('token')!;
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    const tampered = await call('GET', url.replace(token, flipped));
    expect(tampered.status).toBe(403);
    expect(tampered.body.code).toBe('invalid_signature');
    const elsewhere = await call('GET', url.replace('secret/plan.txt', 'notes.txt'));
    expect(elsewhere.status).toBe(403);
    expect((await call('GET', url.split('?')[0]!)).status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(signed.body.expiresAt) - Date.now()) + 1100));
    const expired = await call('GET', url);
    expect(expired.status).toBe(400);
    expect(expired.body.code).toBe('url_expired');
  });

  it('refuses expiresIn outside 1 s to 7 days, and a signed URL for an object that does not exist', async () => {
    expect((await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=0`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=604801`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', `${objects('docs')}/url?path=nothing.txt`, { headers: operator() })).status).toBe(404);
  });

  it('serves a public bucket at the public URL to anyone, and never a private one', async () => {
    const cat = await fetchBytes(`/storage/v1/object/public/${p.project.id}/pics/cat.png`);
    expect(cat.status).toBe(200);
    expect([...cat.bytes]).toEqual([1, 2, 3]);
    expect(cat.headers.get('content-type')).toBe('image/png');
    const privateOne = await call('GET', `/storage/v1/object/public/${p.project.id}/docs/secret/plan.txt`);
    expect(privateOne.status).toBe(404);
    expect(privateOne.text).not.toContain('the plan');
    expect((await call('GET', `/storage/v1/object/public/${p.project.id}/pics/missing.png`)).status).toBe(404);
  });

  it('refuses at the public and signed URLs a path or bucket name no object can have, as the object routes do', async () => {
    for (const route of ['public', 'sign']) {
      for (const tail of ['pics/x%00.png', 'pics/a%01b.png', 'pics/a//b.png', `${'b'.repeat(64)}/cat.png`]) {
        const answer = await call('GET', `/storage/v1/object/${route}/${p.project.id}/${tail}${route === 'sign' ? '?token=x' : ''}`);
        expect({ status: answer.status, code: answer.body.code }, `${route} ${tail}`).toEqual({ status: 400, code: 'invalid_request' });
      }
    }
  });

  it('serves at the public URL only objects with a row: not bytes the store holds without one, as a failed upload may leave', async () => {
    const key = objectKey(p.project.id, 'pics', 'orphan.png');
    await store.put(key, Readable.from([Buffer.from([9, 9, 9])]), { contentType: 'image/png' });
    try {
      const url = `/storage/v1/object/public/${p.project.id}/pics/orphan.png`;
      const orphan = await call('GET', url);
      expect(orphan.status).toBe(404);
      expect(orphan.body).toMatchObject({ code: 'not_found', message: 'object not found' });
      expect((await fetch(new URL(url, inject('baseUrl')), { method: 'HEAD' })).status).toBe(404);
    } finally {
      await store.deleteMany([key]);
    }
  });

  it('serves at a signed URL only while the object has a row, whatever bytes the store still holds', async () => {
    expect((await upload('docs', 'fleeting.txt', 'here for now', operator())).status).toBe(201);
    const signed = await call('GET', `${objects('docs')}/url?path=fleeting.txt&expiresIn=60`, { headers: operator() });
    const url = local(signed.body.url);
    expect((await fetchBytes(url)).bytes.toString()).toBe('here for now');
    // The row goes and the bytes stay, as when a delete's bytes could not be removed.
    const key = await storedKeyOf('docs', 'fleeting.txt');
    await tenant.client.query("delete from storage.objects where bucket = 'docs' and path = 'fleeting.txt'");
    try {
      const gone = await call('GET', url);
      expect(gone.status).toBe(404);
      expect(gone.body).toMatchObject({ code: 'not_found', message: 'object not found' });
    } finally {
      await store.deleteMany([key]);
    }
  });

  it('follows the bucket toggle: made public the bucket is served, made private again it is not', async () => {
    const url = `/storage/v1/object/public/${p.project.id}/docs/secret/plan.txt`;
    expect((await call('PATCH', `/api/projects/${p.project.id}/storage/buckets/docs`, { headers: operator(), body: { public: true } })).status).toBe(200);
    expect((await fetchBytes(url)).bytes.toString()).toBe('the plan');
    expect((await call('PATCH', `/api/projects/${p.project.id}/storage/buckets/docs`, { headers: operator(), body: { public: false } })).status).toBe(200);
    expect((await call('GET', url)).status).toBe(404);
  });
});

/**
 * A client that goes away in the middle of its request (an upload cut off)
 * is not the data plane's error: nothing is logged at error level for it, so
 * an operator watching for errors sees the real ones.
 */
import http from 'node:http';
import { beforeAll, expect, inject, it } from 'vitest';
import { serviceLogLines } from '../../deploy/test/logs';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';

let operator: Operator;
let project: ProjectAnswer;

/** Error-level lines (pino level 50 and up) of every data-plane replica's log. */
async function errorLines(): Promise<string[]> {
  return (await serviceLogLines('data-plane')).filter((line) => /"level":(5|6)\d/.test(line));
}

/** Starts an upload of 10 MiB, sends 256 KiB of it and resets the connection. */
function abandonUpload(base: string, objectPath: string): Promise<void> {
  const boundary = 'abandoned-boundary';
  const url = new URL(`/api/projects/${project.id}/storage/buckets/docs/objects?path=${objectPath}`, base);
  return new Promise<void>((resolve) => {
    const request = http.request(url, { method: 'POST', headers: { ...bearer(operator.token), 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(10 * 1024 * 1024) } });
    request.on('error', () => resolve());
    request.on('close', () => resolve());
    request.write(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`);
    request.write(Buffer.alloc(256 * 1024, 1), () => setTimeout(() => request.destroy(), 200));
  });
}

beforeAll(async () => {
  operator = await signUpOperator('Aborted');
  project = await createProject(operator, 'aborted requests');
  const bucket = await call('POST', `/api/projects/${project.id}/storage/buckets`, { headers: bearer(operator.token), body: { name: 'docs' } });
  expect(bucket.status, bucket.text).toBe(201);
});

it('logs no error when a client resets its upload half-way, straight to a replica or through the gateway', async () => {
  const before = await errorLines();
  const replica = `http://127.0.0.1:${inject('servicePorts').dataPlanes[0]}`;
  for (let i = 0; i < 3; i++) {
    await abandonUpload(replica, `direct-${i}.bin`);
    await abandonUpload(inject('baseUrl'), `gateway-${i}.bin`);
  }
  // The replica notices the lost client asynchronously; an upload after gives it the time, and shows it still serves.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const form = new FormData();
  form.append('file', new Blob(['after']), 'after.txt');
  const after = await fetch(new URL(`/api/projects/${project.id}/storage/buckets/docs/objects?path=after.txt`, replica), { method: 'POST', headers: bearer(operator.token), body: form });
  expect(after.status, await after.text()).toBe(201);
  expect((await errorLines()).slice(before.length)).toEqual([]);
});

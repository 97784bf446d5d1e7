/**
 * The local stack as the test harness started it: every part reports ready,
 * the gateway's own answers keep the API error shape, a dead service comes back.
 */
import { existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { ConfigError, loadConfig } from '@baseplane/contracts';
import { startStack } from '../local/src/stack';
import { processesWithEnv } from './processes';

const baseUrl = inject('baseUrl');

interface HealthBody {
  status: string;
  parts: Record<string, string>;
}

async function healthz(): Promise<{ status: number; body: HealthBody }> {
  const response = await fetch(`${baseUrl}/healthz`);
  return { status: response.status, body: (await response.json()) as HealthBody };
}

describe('local stack', () => {
  it('reports all five parts ready on /healthz', async () => {
    const { status, body } = await healthz();
    expect(body).toEqual({
      status: 'ok',
      parts: { platformDatabase: 'ok', temporal: 'ok', controlPlane: 'ok', worker: 'ok', dataPlane: 'ok' },
    });
    expect(status).toBe(200);
  });

  it('answers an unknown path with 404 in the API error shape', async () => {
    const response = await fetch(`${baseUrl}/no/such/path?x=1`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({
      code: 'not_found',
      message: expect.stringContaining('/no/such/path'),
      details: null,
      hint: null,
    });
  });

  it('restarts a service that dies, on the same port', async () => {
    const port = String(inject('servicePorts').dataPlane);
    const [pid] = processesWithEnv('DATA_PLANE_PORT', port);
    expect(pid).toBeDefined();
    process.kill(pid!, 'SIGKILL');

    // Back when a new process serves the port and the stack is healthy again.
    const deadline = Date.now() + 30_000;
    let replaced = false;
    let last = await healthz();
    while (!(replaced && last.status === 200) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const current = processesWithEnv('DATA_PLANE_PORT', port);
      replaced = current.length > 0 && !current.includes(pid!);
      last = await healthz();
    }
    expect(replaced).toBe(true);
    expect(last.body.parts.dataPlane).toBe('ok');
  });
});

describe('configuration', () => {
  it('rejects a bad PORT with one line naming PORT', () => {
    for (const bad of ['abc', '70000', '0']) {
      const load = () => loadConfig({ PORT: bad });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(/^[^\n]*\bPORT\b[^\n]*$/);
    }
  });

  it('refuses a bad DATA_PLANE_REPLICAS in one line naming it, before making DATA_DIR or a secret', async () => {
    for (const bad of ['abc', '0', '17', '1.5']) {
      const dataDir = path.join(os.tmpdir(), `baseplane-bad-replicas-${randomUUID()}`);
      const start = startStack({ dataDir, port: 0, env: { DATA_PLANE_REPLICAS: bad } });
      await expect(start).rejects.toBeInstanceOf(ConfigError);
      await expect(start).rejects.toThrow(/^[^\n]*\bDATA_PLANE_REPLICAS\b[^\n]*$/);
      expect(existsSync(dataDir), bad).toBe(false);
    }
  });
});

/** Sends `request` as raw bytes to a port of this machine; answers the status and the parsed JSON body. */
function rawRequest(port: number, request: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => { answer += chunk; });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      try {
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), body: JSON.parse(body) as Record<string, unknown> });
      } catch (error) {
        reject(new Error(`unreadable answer ${JSON.stringify(answer.slice(0, 300))}: ${String(error)}`));
      }
    });
  });
}

describe('requests node refuses before any route', () => {
  const ports = () => {
    const services = inject('servicePorts');
    return { gateway: Number(new URL(baseUrl).port), controlPlane: services.controlPlane, ...Object.fromEntries(services.dataPlanes.map((port, i) => [`dataPlane${i}`, port])) };
  };

  it('answers a URL over 16 KB with 431 in the API error shape, on the gateway and every service', async () => {
    for (const [part, port] of Object.entries(ports())) {
      const answer = await rawRequest(port, `GET /rest/v1/things?name=in.(${'x,'.repeat(10_000)}x) HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      expect([part, answer.status, answer.body.code]).toEqual([part, 431, 'headers_too_large']);
      expect(Object.keys(answer.body).sort()).toEqual(['code', 'details', 'hint', 'message']);
    }
  });

  it('answers a request that is not HTTP with 400 invalid_request in the API error shape', async () => {
    for (const [part, port] of Object.entries(ports())) {
      const answer = await rawRequest(port, 'HELLO THERE\r\n\r\n');
      expect([part, answer.status, answer.body.code]).toEqual([part, 400, 'invalid_request']);
    }
  });
});


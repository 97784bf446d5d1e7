/**
 * `npm run bench:auth`: end-user auth under load at 20 concurrent clients on a
 * fresh stack — sign-ins (bound by argon2id at the chosen cost), refreshes
 * (each one spending a session's refresh token and handing on the next), and
 * `GET /me`. Baseline in the same run: argon2id verifications per second in
 * this process, on the same cores, with the same parameters.
 *
 * As in bench:rest, the stack runs one data-plane replica per core and wrk
 * spreads the connections over them (wrk.ts); refresh and `/me` are measured
 * once more through the local stack's gateway with a Node client
 * (http-load.ts, in a worker thread).
 */
import os from 'node:os';
import argon2 from 'argon2';
import { PASSWORD_HASH_COST } from '@baseplane/contracts';
import { counted, httpLoad, type LoadOptions, type RequestSpec } from './http-load';
import { statesForChain, wrkLoad } from './wrk';
import { closedLoop, expectStatus, onePerCoreEnv, printLoad, printRatio, run, withBenchStack } from './measure';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARM_UP_SECONDS = 1;
const PASSWORD = 'benchmark password';
const OPTIONS: LoadOptions = { concurrency: CLIENTS, seconds: SECONDS, warmUpSeconds: WARM_UP_SECONDS };


run(() =>
  withBenchStack(async ({ stack, call }) => {
    const project = await call('POST', '/api/projects', { name: 'auth bench' });
    expectStatus(project, 201, 'project');
    const anonKey: string = project.json.anonKey;

    const post = async (path: string, body: unknown, extra: Record<string, string> = {}): Promise<any> => {
      const response = await fetch(new URL(`/rest/v1/auth/${path}`, stack.baseUrl), {
        method: 'POST',
        headers: { apikey: anonKey, 'content-type': 'application/json', ...extra },
        body: JSON.stringify(body),
      });
      const json = (await response.json()) as any;
      if (response.status >= 300) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const emails = Array.from({ length: CLIENTS }, (_, i) => `bench-${i}-${Date.now()}@example.com`);
    // With the service key, which sign-ups per IP do not limit: BENCH_CLIENTS may be more than an IP's 30.
    const sessions = await Promise.all(emails.map((email) => post('signup', { email, password: PASSWORD }, { apikey: project.json.serviceKey })));
    const accessTokens: string[] = sessions.map((s) => s.accessToken);
    /** `count` more sessions of the bench's users, for their refresh tokens: a refresh spends one and hands on the next. */
    const refreshTokens = async (count: number): Promise<string[]> => {
      const more = [];
      for (let i = 0; i < count; i += 8) {
        more.push(...(await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, k) => post('signin', { email: emails[(i + k) % CLIENTS], password: PASSWORD })))));
      }
      return more.map((s) => s.refreshToken);
    };

    const replicas = stack.servicePorts.dataPlanes.map((port) => `http://127.0.0.1:${port}`);
    console.log(`data-plane replicas: ${replicas.length} (DATA_PLANE_REPLICAS) on ${os.cpus().length} cores; ${CLIENTS} concurrent clients; ${SECONDS} s per line after ${WARM_UP_SECONDS} s warm-up`);
    console.log('load from wrk spread over the replicas, unless the line says otherwise');
    console.log(`argon2id m=${PASSWORD_HASH_COST.memoryCost} KiB t=${PASSWORD_HASH_COST.timeCost} p=${PASSWORD_HASH_COST.parallelism}`);
    console.log('');

    const hash = await argon2.hash(PASSWORD, { type: argon2.argon2id, ...PASSWORD_HASH_COST });
    const baseline = await closedLoop(CLIENTS, SECONDS, async () => {
      if (!(await argon2.verify(hash, PASSWORD))) throw new Error('argon2 verify failed');
    });
    printLoad('baseline: argon2id verify in-process', baseline);

    const keyed = { apikey: anonKey };
    const signinSpec: RequestSpec = { method: 'POST', path: '/rest/v1/auth/signin', headers: keyed, body: `{"email":"{state}","password":"${PASSWORD}"}`, states: emails, status: 200 };
    const signins = counted(await wrkLoad(replicas, signinSpec, OPTIONS));
    printLoad('POST /auth/signin', signins);
    const refreshSpec = (states: string[]): RequestSpec => ({ method: 'POST', path: '/rest/v1/auth/refresh', headers: keyed, body: '{"refreshToken":"{state}"}', states, nextState: 'refreshToken', status: 200 });
    const refreshes = counted(await wrkLoad(replicas, refreshSpec(await refreshTokens(statesForChain(replicas.length, OPTIONS))), OPTIONS));
    printLoad('POST /auth/refresh', refreshes);
    // Access tokens outlive the rotations of their session's refresh token.
    const meSpec: RequestSpec = { method: 'GET', path: '/rest/v1/auth/me', headers: { authorization: 'Bearer {state}' }, states: accessTokens, status: 200 };
    const me = counted(await wrkLoad(replicas, meSpec, OPTIONS));
    printLoad('GET /auth/me', me);
    // The gateway is the local stack's Node proxy; a deployment replaces it with its ingress. Node's client chains a
    // connection's tokens itself (connection i starts from token i).
    printLoad('POST /auth/refresh, through the gateway (Node client)', counted(await httpLoad(stack.baseUrl, refreshSpec(await refreshTokens(CLIENTS)), OPTIONS)));
    printLoad('GET /auth/me, through the gateway (Node client)', counted(await httpLoad(stack.baseUrl, meSpec, OPTIONS)));

    console.log('');
    printRatio('sign-ins / raw argon2id verifications', signins.perSecond, baseline.perSecond);
    const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
    console.log(`goals: sign-in ≥ 40/s ${verdict(signins.perSecond >= 40)}; refresh ≥ 3,000/s ${verdict(refreshes.perSecond >= 3000)}; /me ≥ 5,000/s ${verdict(me.perSecond >= 5000)}`);
  }, onePerCoreEnv()),
);

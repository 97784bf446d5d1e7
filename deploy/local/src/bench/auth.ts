/**
 * `npm run bench:auth`: end-user auth under load at 20 concurrent clients on a
 * fresh stack — sign-ins (bound by argon2id at the chosen cost), refreshes
 * (each client rotating its own session's token), and `GET /me`. Baseline in
 * the same run: argon2id verifications per second in this process, on the
 * same cores, with the same parameters. The HTTP load runs in a worker
 * thread (http-load.ts), apart from the gateway's event loop.
 */
import argon2 from 'argon2';
import { PASSWORD_HASH_COST } from '@baseplane/contracts';
import { httpLoad, type LoadResult as HttpLoadResult, type RequestSpec } from './http-load';
import { closedLoop, expectStatus, printLoad, printRatio, run, withBenchStack, type LoadResult } from './measure';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARM_UP_SECONDS = 1;
const PASSWORD = 'benchmark password';

/** The HTTP loop's answer as the printing expects it; a failed answer ends the bench (a figure over errors means nothing). */
function counted(result: HttpLoadResult): LoadResult {
  if (result.errors > 0) throw new Error(`${result.errors} requests failed (first: ${result.firstError})`);
  return { requests: result.latencies.length, perSecond: result.perSecond, latencies: result.latencies };
}

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
    const sessions = await Promise.all(emails.map((email) => post('signup', { email, password: PASSWORD })));
    const refreshTokens: string[] = sessions.map((s) => s.refreshToken);
    const accessTokens: string[] = sessions.map((s) => s.accessToken);

    console.log(`${CLIENTS} concurrent clients, ${SECONDS} s each, through the gateway at ${stack.baseUrl}`);
    console.log(`argon2id m=${PASSWORD_HASH_COST.memoryCost} KiB t=${PASSWORD_HASH_COST.timeCost} p=${PASSWORD_HASH_COST.parallelism}`);

    const hash = await argon2.hash(PASSWORD, { type: argon2.argon2id, ...PASSWORD_HASH_COST });
    const baseline = await closedLoop(CLIENTS, SECONDS, async () => {
      if (!(await argon2.verify(hash, PASSWORD))) throw new Error('argon2 verify failed');
    });

    const auth = (base: string, spec: Omit<RequestSpec, 'status'>) =>
      httpLoad(base, { ...spec, status: 200 }, { concurrency: CLIENTS, seconds: SECONDS, warmUpSeconds: WARM_UP_SECONDS }).then(counted);
    const keyed = { apikey: anonKey };
    const signins = await auth(stack.baseUrl, { method: 'POST', path: '/rest/v1/auth/signin', headers: keyed, body: `{"email":"{state}","password":"${PASSWORD}"}`, states: emails });
    // Each connection rotates its own session's refresh token: every answer's token is the next call's.
    const refreshes = await auth(stack.baseUrl, { method: 'POST', path: '/rest/v1/auth/refresh', headers: keyed, body: '{"refreshToken":"{state}"}', states: refreshTokens, nextState: 'refreshToken' });
    // Access tokens outlive the rotations of their session's refresh token.
    const meAt = (base: string) => auth(base, { method: 'GET', path: '/rest/v1/auth/me', headers: { authorization: 'Bearer {state}' }, states: accessTokens });
    const me = await meAt(stack.baseUrl);
    const meDirect = await meAt(`http://127.0.0.1:${stack.servicePorts.dataPlanes[0]}`);

    console.log('');
    printLoad('baseline: argon2id verify in-process', baseline);
    printLoad('POST /auth/signin', signins);
    printLoad('POST /auth/refresh', refreshes);
    printLoad('GET /auth/me', me);
    printLoad('GET /auth/me, straight to one replica', meDirect);
    printRatio('sign-ins / raw argon2id verifications', signins.perSecond, baseline.perSecond);
    const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
    console.log(`goals: sign-in ≥ 40/s ${verdict(signins.perSecond >= 40)}; refresh ≥ 3,000/s ${verdict(refreshes.perSecond >= 3000)}; /me ≥ 5,000/s ${verdict(me.perSecond >= 5000)}`);
  }),
);

/**
 * `npm run bench:auth`: end-user auth under load at 20 concurrent clients on a
 * fresh stack — sign-ins (bound by argon2id at the chosen cost), refreshes
 * (each client rotating its own session's token), and `GET /me`. Baseline in
 * the same run: argon2id verifications per second in this process, on the
 * same cores, with the same parameters.
 */
import argon2 from 'argon2';
import { PASSWORD_HASH_COST } from '@baseplane/contracts';
import { closedLoop, expectStatus, printLoad, printRatio, run, withBenchStack } from './measure';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const PASSWORD = 'benchmark password';

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

    const signins = await closedLoop(CLIENTS, SECONDS, async (client) => {
      await post('signin', { email: emails[client], password: PASSWORD });
    });
    const refreshes = await closedLoop(CLIENTS, SECONDS, async (client) => {
      const next = await post('refresh', { refreshToken: refreshTokens[client] });
      refreshTokens[client] = next.refreshToken;
      accessTokens[client] = next.accessToken;
    });
    const meAt = (base: string) => closedLoop(CLIENTS, SECONDS, async (client) => {
      const response = await fetch(new URL('/rest/v1/auth/me', base), { headers: { authorization: `Bearer ${accessTokens[client]}` } });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`me: ${response.status}`);
    });
    const me = await meAt(stack.baseUrl);
    // The gateway is the local stack's Node proxy; the same loop straight to one replica shows what it costs.
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

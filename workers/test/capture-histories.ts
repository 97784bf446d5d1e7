/**
 * Records new fixtures for workflow-replay.unit.test.ts:
 * `npm run capture-histories --prefix workers` (or `npx tsx workers/test/capture-histories.ts`).
 *
 * Runs workflow-histories.capture.e2e.test.ts twice, each time on a fresh test stack, and writes
 * - `histories/<date>-project-life.json`: the stack's own Temporal dev server (one run: the project's whole life);
 * - `histories/<date>-project-life-continued-as-new.json`: a Temporal dev server of its own, started here with
 *   `limit.historyCount.suggestContinueAsNew` at CONTINUE_AS_NEW_AFTER events, so the workflow continues as new
 *   several times and the runs it starts that way are recorded too.
 * Existing files are kept (a file of the same date is overwritten): commit the new ones alongside the old.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveTemporalBin } from '../../deploy/local/src/temporal';
import { canConnect, findFreePorts } from '../../deploy/local/src/net';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CAPTURE_TEST = 'workers/test/workflow-histories.capture.e2e.test.ts';
const CONTINUE_AS_NEW_AFTER = 40;
const date = new Date().toISOString().slice(0, 10);

function exited(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode ?? 1);
    else child.once('exit', (code) => resolve(code ?? 1));
  });
}

async function capture(name: string, scenario: string, env: Record<string, string> = {}): Promise<void> {
  const vitest = spawn(path.join(REPO_ROOT, 'node_modules', '.bin', 'vitest'), ['run', CAPTURE_TEST], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
    env: { ...process.env, ...env, CAPTURE_HISTORIES: '1', CAPTURE_HISTORIES_NAME: name, CAPTURE_HISTORIES_SCENARIO: scenario },
  });
  const code = await exited(vitest);
  if (code !== 0) throw new Error(`capturing ${name} failed (vitest exited ${code})`);
}

/** An in-memory Temporal dev server that suggests continue-as-new early; resolves once it serves. */
async function startEagerTemporal(): Promise<{ address: string; stop: () => Promise<void> }> {
  const { port, httpPort, metricsPort } = await findFreePorts(['port', 'httpPort', 'metricsPort']);
  // prettier-ignore
  const child = spawn(resolveTemporalBin(process.env), [
    'server', 'start-dev', '--headless',
    '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort),
    '--namespace', process.env.TEMPORAL_NAMESPACE?.trim() || 'default',
    '--log-level', 'warn', '--color', 'never',
    '--dynamic-config-value', `limit.historyCount.suggestContinueAsNew=${CONTINUE_AS_NEW_AFTER}`,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let banner = false;
  child.stdout!.on('data', (chunk: Buffer) => {
    if (/^Server:/m.test(chunk.toString('utf8'))) banner = true;
  });
  // Its warnings (pollers cut at shutdown, mostly) are shown only when it fails to start.
  const warnings: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => warnings.push(chunk.toString('utf8')));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited(child);
  };
  const deadline = Date.now() + 60_000;
  while (!(banner && (await canConnect('127.0.0.1', port, 1000)))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`the Temporal dev server for the continue-as-new capture did not start:\n${warnings.join('')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { address: `127.0.0.1:${port}`, stop };
}

await capture(`${date}-project-life`, 'one project through its whole life on the test stack');
const temporal = await startEagerTemporal();
try {
  await capture(`${date}-project-life-continued-as-new`, `the same life on a Temporal suggesting continue-as-new after ${CONTINUE_AS_NEW_AFTER} events`, {
    TEMPORAL_ADDRESS: temporal.address,
  });
} finally {
  await temporal.stop();
}
console.log('Replay them: npx vitest run workers/test/workflow-replay.unit.test.ts; then commit workers/test/histories/.');

/**
 * Replay safety net: every recorded history of the project workflow in `histories/` is replayed against the
 * current `workers/src/workflows.ts`, bundled as the worker bundles it (workers/src/main.ts). Workflows that
 * run in production replay their history on any worker that picks them up after a deploy (a restart, a cache
 * eviction): a change that makes the code issue other commands than the history holds (another activity, two
 * calls swapped, a timer more or less, a renamed activity or workflow) fails them with a non-determinism error.
 *
 * The rule when this test fails:
 * - The change was meant: guard it with `patched('<change-id>')` (and later `deprecatePatch`) from
 *   `@temporalio/workflow`, so runs recorded before it take the old path; never edit or delete a history
 *   here to make the test pass. Old histories keep replaying for as long as runs recorded before the change
 *   may be alive anywhere (a history is retired only together with the patch's old branch).
 * - Then record new histories alongside the old ones: `npm run capture-histories --prefix workers`
 *   (workers/test/capture-histories.ts; it writes `histories/<date>-*.json`) and commit them.
 * A production history worth keeping (`temporal workflow show --workflow-id … --output json`) may be put
 * here as is (workflow-histories.ts reads both formats).
 */
import { DefaultLogger, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH, readHistoryFixtures, type HistoryFixture } from './workflow-histories';

let fixtures: HistoryFixture[];

beforeAll(async () => {
  fixtures = await readHistoryFixtures();
  // The replay worker logs each replayed task at INFO; only what goes wrong belongs in the test's output.
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    /* already installed in this process */
  }
});

describe('project workflow replay', () => {
  it('has recorded histories to replay, a continued-as-new run among them', () => {
    expect(fixtures.length).toBeGreaterThan(0);
    const continued = fixtures.filter((f) => f.history.events?.some((e) => e.workflowExecutionContinuedAsNewEventAttributes));
    expect(continued.length).toBeGreaterThan(0);
  });

  it('replays every recorded history without a non-determinism or other replay error', { timeout: 180_000 }, async () => {
    const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
    const failures: string[] = [];
    let replayed = 0;
    const byRun = new Map(fixtures.map((f) => [`${f.workflowId}/${f.runId}`, f]));
    for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: 'project-workflow-replay-test' }, fixtures)) {
      replayed += 1;
      if (result.error) {
        const file = byRun.get(`${result.workflowId}/${result.runId}`)?.file ?? '?';
        failures.push(`${file} ${result.workflowId} (run ${result.runId}): ${result.error.name}: ${result.error.message}`);
      }
    }
    expect(failures, failures.join('\n')).toEqual([]);
    expect(replayed).toBe(fixtures.length);
  });
});

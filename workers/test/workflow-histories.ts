/**
 * The project workflow's recorded histories (`histories/*.json`), which
 * workflow-replay.unit.test.ts replays against the current workflow code.
 *
 * A file is either what workflow-histories.capture.e2e.test.ts writes,
 * `{ captured, scenario, workflowsSha256, histories: [{ workflowId, runId, history: { events } }] }`
 * (one entry per run, continued-as-new runs included), or one plain history as Temporal's tools export it,
 * `{ events: [...] }` (`temporal workflow show --workflow-id … --output json`, or the UI's download), for a
 * production workflow worth keeping; its workflow ID is then the file's name.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON, type History } from '@temporalio/common/lib/proto-utils';

export const HISTORIES_DIR = fileURLToPath(new URL('./histories/', import.meta.url));
export const WORKFLOWS_PATH = fileURLToPath(new URL('../src/workflows.ts', import.meta.url));

/** One stored run of a workflow. */
export interface RecordedRun {
  workflowId: string;
  runId: string;
  /** The history as Temporal's JSON (what `historyToJSON` writes), `{ events: [...] }`. */
  history: { events: unknown[] };
}

/** A file written by the capture. */
export interface CapturedHistories {
  /** When (ISO date-time) and from which workflow code (sha-256 of workers/src/workflows.ts) the runs were recorded. */
  captured: string;
  workflowsSha256: string;
  /** What was done to the project (and under which Temporal settings). */
  scenario: string;
  histories: RecordedRun[];
}

/** A history ready for `Worker.runReplayHistories`, with the file it came from. */
export interface HistoryFixture {
  file: string;
  workflowId: string;
  runId: string;
  history: History;
}

/** Every run kept in `dir`, in file name order; throws on a file it cannot read as either format. */
export async function readHistoryFixtures(dir = HISTORIES_DIR): Promise<HistoryFixture[]> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
  const fixtures: HistoryFixture[] = [];
  for (const file of files) {
    const parsed = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as Partial<CapturedHistories> & { events?: unknown[] };
    if (Array.isArray(parsed.histories)) {
      for (const run of parsed.histories) fixtures.push({ file, workflowId: run.workflowId, runId: run.runId, history: historyFromJSON(run.history) });
    } else if (Array.isArray(parsed.events)) {
      const history = historyFromJSON(parsed);
      const runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.originalExecutionRunId ?? '';
      fixtures.push({ file, workflowId: path.basename(file, '.json'), runId, history });
    } else {
      throw new Error(`${file}: neither { histories: [...] } nor { events: [...] }`);
    }
  }
  return fixtures;
}

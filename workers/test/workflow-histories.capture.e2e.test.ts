/**
 * Records real histories of the project workflow for workflow-replay.unit.test.ts: drives one project through
 * a representative life on the test stack (provisioning, a ping, schema changes, one of them refused by
 * PostgreSQL, two changes in one batch, a bucket made public and deleted with its objects, a key rotation, the
 * project's deletion), then writes every run of its workflow to `histories/<CAPTURE_HISTORIES_NAME>.json`.
 *
 * Skipped unless CAPTURE_HISTORIES=1: run it through `npm run capture-histories --prefix workers`
 * (capture-histories.ts), which records once on the stack's own Temporal and once on a Temporal that suggests
 * continue-as-new every few dozen events, so that runs started by continue-as-new are recorded too.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { NativeConnection } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { projectWorkflowId } from '@baseplane/contracts';
import { bearer, call, createProject, projectEventTypes, signUpOperator } from '../../deploy/test/http';
import { HISTORIES_DIR, WORKFLOWS_PATH, type CapturedHistories, type RecordedRun } from './workflow-histories';

const NAME = process.env.CAPTURE_HISTORIES_NAME ?? `${new Date().toISOString().slice(0, 10)}-project-life`;
const SCENARIO = process.env.CAPTURE_HISTORIES_SCENARIO ?? 'one project through its whole life on the test stack';
const NAMESPACE = process.env.TEMPORAL_NAMESPACE?.trim() || 'default';
/** temporal.api.enums.v1.WorkflowExecutionStatus */
const COMPLETED = 2;

type Service = NativeConnection['workflowService'];

/** Every event of one run, all pages. */
async function runHistory(service: Service, workflowId: string, runId: string): Promise<RecordedRun> {
  const events: unknown[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await service.getWorkflowExecutionHistory({ namespace: NAMESPACE, execution: { workflowId, runId }, nextPageToken });
    events.push(...(JSON.parse(historyToJSON(page.history ?? { events: [] })) as { events: unknown[] }).events);
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { workflowId, runId, history: { events } };
}

/** The runs of a workflow, first to last: from the latest back along each run's `continuedExecutionRunId`. */
async function allRuns(service: Service, workflowId: string, latestRunId: string): Promise<RecordedRun[]> {
  const runs: RecordedRun[] = [];
  for (let runId = latestRunId; runId; ) {
    const run = await runHistory(service, workflowId, runId);
    runs.unshift(run);
    const started = run.history.events[0] as { workflowExecutionStartedEventAttributes?: { continuedExecutionRunId?: string } };
    runId = started.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? '';
  }
  return runs;
}

describe.skipIf(process.env.CAPTURE_HISTORIES !== '1')('capturing project workflow histories', () => {
  it(`records one project's life into histories/${NAME}.json`, { timeout: 300_000 }, async () => {
    const operator = await signUpOperator('History capture');
    const h = bearer(operator.token);
    const project = await createProject(operator, 'history capture');
    const api = `/api/projects/${project.id}`;
    const expectStatus = async (answer: Promise<{ status: number; text: string }>, status: number) => {
      const got = await answer;
      expect(got.status, got.text).toBe(status);
    };

    await expectStatus(call('POST', `${api}/ping`, { headers: h }), 200);
    await expectStatus(call('POST', `${api}/tables`, { headers: h, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } }), 201);
    await expectStatus(call('POST', `${api}/tables/notes/columns`, { headers: h, body: { name: 'tag', type: 'text' } }), 201);
    // PostgreSQL refuses this change (a row that is no number): the workflow records SchemaChangeFailed itself.
    await expectStatus(call('POST', '/api/sql/execute', { headers: h, body: { projectId: project.id, query: `insert into notes (body) values ('not a number')` } }), 200);
    await expectStatus(call('PUT', `${api}/tables/notes/columns/body`, { headers: h, body: { type: 'integer', using: 'body::integer' } }), 422);
    // Two changes accepted at once: usually applied in one batch of loadPendingEvents.
    const before = (await projectEventTypes(project.id)).length;
    const async = { ...h, prefer: 'respond-async' };
    await Promise.all([
      expectStatus(call('POST', `${api}/tables`, { headers: async, body: { name: 'tags', columns: [{ name: 'label', type: 'text' }] } }), 202),
      expectStatus(call('DELETE', `${api}/tables/notes/columns/tag`, { headers: async }), 202),
    ]);
    await expect.poll(async () => (await projectEventTypes(project.id, before)).filter((type) => type === 'SchemaChangeApplied').length, { timeout: 30_000 }).toBe(2);

    await expectStatus(call('POST', `${api}/storage/buckets`, { headers: h, body: { name: 'avatars' } }), 201);
    await expectStatus(call('PATCH', `${api}/storage/buckets/avatars`, { headers: h, body: { public: true } }), 200);
    const form = new FormData();
    form.append('file', new Blob(['a picture'], { type: 'text/plain' }), 'a.txt');
    const uploaded = await fetch(new URL(`${api}/storage/buckets/avatars/objects?path=a.txt`, inject('baseUrl')), { method: 'POST', headers: h, body: form });
    expect(uploaded.status, await uploaded.text()).toBeLessThan(300);
    await expectStatus(call('DELETE', `${api}/storage/buckets/avatars`, { headers: h }), 409);
    await expectStatus(call('DELETE', `${api}/storage/buckets/avatars?force=true`, { headers: h }), 200);
    // Not applied by the workflow, but in the stream: the next batch's range spans it.
    await expectStatus(call('POST', `${api}/keys/rotate`, { headers: h, body: { kind: 'anon' } }), 200);
    await expectStatus(call('DELETE', api, { headers: h }), 200);

    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    try {
      const service = connection.workflowService;
      const workflowId = projectWorkflowId(project.id);
      // The workflow ends once the deleted project's objects are gone, a moment after the deletion's answer.
      let latestRunId = '';
      await expect
        .poll(async () => {
          const { workflowExecutionInfo } = await service.describeWorkflowExecution({ namespace: NAMESPACE, execution: { workflowId } });
          latestRunId = workflowExecutionInfo?.execution?.runId ?? '';
          return workflowExecutionInfo?.status;
        }, { timeout: 60_000 })
        .toBe(COMPLETED);
      const histories = await allRuns(service, workflowId, latestRunId);
      const file: CapturedHistories = {
        captured: new Date().toISOString(),
        workflowsSha256: createHash('sha256').update(await readFile(WORKFLOWS_PATH)).digest('hex'),
        scenario: `${SCENARIO}: ${(await projectEventTypes(project.id)).join(', ')}`,
        histories,
      };
      await mkdir(HISTORIES_DIR, { recursive: true });
      const target = path.join(HISTORIES_DIR, `${NAME}.json`);
      await writeFile(target, `${JSON.stringify(file, null, 1)}\n`);
      const events = histories.reduce((sum, run) => sum + run.history.events.length, 0);
      console.log(`[capture] ${target}: ${histories.length} run(s), ${events} events`);
    } finally {
      await connection.close();
    }
  });
});

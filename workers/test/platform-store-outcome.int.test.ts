/**
 * An outcome event is recorded once per cause, even when attempts of the
 * same activity record it at the same time (an attempt Temporal gave up on
 * past its timeout still runs, and the next one finds its work done).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { projectStreamId, type ProjectEvent } from '@baseplane/contracts';
import { createProject, signUpOperator, type ProjectAnswer } from '../../deploy/test/http';
import { PlatformStore } from '../src/platform-store';

let project: ProjectAnswer;
let pool: pg.Pool;

beforeAll(async () => {
  project = await createProject(await signUpOperator('Outcome'), 'outcome once');
  pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
});
afterAll(async () => {
  await pool?.end();
});

it('records one outcome for a cause that ten attempts record at once', async () => {
  const store = new PlatformStore(pool);
  // A cause of its own, past the stream's end, so no real operation is touched.
  const causationVersion = 10_000 + Math.floor(Math.random() * 1000);
  const outcome = { type: 'ProjectPingApplied', data: { projectId: project.id, causationVersion } } as ProjectEvent & { data: { causationVersion: number } };
  const correlationId = randomUUID();
  await Promise.all(Array.from({ length: 10 }, () => store.appendOutcome(project.id, outcome, correlationId)));
  const { rows } = await pool.query(
    `select count(*)::int as n from events where stream_id = $1 and type = 'ProjectPingApplied' and (data->>'causationVersion')::int = $2`,
    [projectStreamId(project.id), causationVersion],
  );
  expect(rows[0].n).toBe(1);
});

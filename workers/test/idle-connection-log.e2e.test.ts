/**
 * What the stack's worker logs when PostgreSQL ends its idle connections (a
 * restart, a stop, an administrator): one warning per connection with the
 * error's message and SQLSTATE, without the failed pg client pg-pool hangs on
 * the error, which printed kilobytes of driver state at every stop.
 */
import pg from 'pg';
import { expect, inject, it } from 'vitest';
import { serviceLogLines } from '../../deploy/test/logs';

it('logs an idle connection PostgreSQL ended as one warning with its SQLSTATE, not its client', async () => {
  const admin = new pg.Client({ connectionString: inject('databaseUrl') });
  await admin.connect();
  try {
    const warnings = async () => (await serviceLogLines('worker')).filter((line) => line.includes('"msg":"idle connection failed"'));
    const before = (await warnings()).length;
    // The worker keeps connections to the platform database between activities; ending the idle ones is what a restart does.
    const ended = await admin.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'baseplane-worker' and state = 'idle' and pid <> pg_backend_pid()",
    );
    expect(ended.rowCount).toBeGreaterThan(0);
    await expect.poll(async () => (await warnings()).length, { timeout: 10_000 }).toBeGreaterThan(before);
    for (const line of (await warnings()).slice(before)) {
      const entry = JSON.parse(line.slice(line.indexOf('{'))) as { level: number; err: Record<string, unknown> };
      expect(entry.level).toBe(40);
      expect(entry.err).toMatchObject({ message: 'terminating connection due to administrator command', code: '57P01' });
      expect(entry.err).not.toHaveProperty('client');
      // The error with its stack and the driver's fields: a line of about 1 KB (with the client, about 4).
      expect(line.length).toBeLessThan(2_000);
    }
  } finally {
    await admin.end();
  }
});

/**
 * Test access to a project's tenant database as the cluster superuser, with
 * a way to act as the project's owner role — the way the SQL console does —
 * so the owner owns what a test creates there.
 */
import pg from 'pg';
import { inject } from 'vitest';
import { tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';

export interface TenantDatabase {
  /** The superuser connection itself. */
  client: pg.Client;
  /** Runs one statement as the project's owner role, in its own transaction. */
  asOwner(sql: string, values?: unknown[]): Promise<pg.QueryResult>;
  end(): Promise<void>;
}

/** The connection string of a project's database as the cluster superuser. */
export function tenantUrl(projectId: string): string {
  const url = new URL(inject('tenantDatabaseUrl'));
  url.pathname = `/${tenantDatabaseName(projectId)}`;
  return url.toString();
}

export async function connectTenant(projectId: string): Promise<TenantDatabase> {
  const client = new pg.Client({ connectionString: tenantUrl(projectId) });
  await client.connect();
  return {
    client,
    async asOwner(sql, values = []) {
      await client.query('begin');
      try {
        await client.query(`set local role "${tenantOwnerRole(projectId)}"`);
        const result = await client.query(sql, values);
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback');
        throw error;
      }
    },
    end: () => client.end(),
  };
}

/**
 * Runs `work` while the project's workflow cannot apply anything: the tenant's applied-version marker is held
 * (`FOR UPDATE`), so the next apply waits for it. Changes recorded meanwhile stay pending until `work` ends.
 */
export async function whileAppliesWait<T>(projectId: string, work: () => Promise<T>): Promise<T> {
  const hold = new pg.Client({ connectionString: tenantUrl(projectId) });
  await hold.connect();
  try {
    await hold.query('begin');
    await hold.query('select version from baseplane_meta.applied for update');
    return await work();
  } finally {
    await hold.query('commit').catch(() => undefined);
    await hold.end();
  }
}

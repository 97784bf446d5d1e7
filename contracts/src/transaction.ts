/**
 * The transaction loop every plane runs on a tenant database, written once.
 * It works on a pool passed in (anything shaped like pg's), so contracts
 * itself opens no connection and depends on no driver.
 */

export interface TransactionClient {
  query(text: string): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
  release(): void;
}

export interface TransactionPool<C extends TransactionClient> {
  connect(): Promise<C>;
}

/**
 * Runs `work` between BEGIN and COMMIT on a client of `pool`; any error rolls
 * back. `unreachable` turns a failure to connect into the caller's error.
 */
export async function inTransaction<C extends TransactionClient, T>(
  pool: TransactionPool<C>,
  work: (client: C) => Promise<T>,
  unreachable: (error: unknown) => Error = (error) => error as Error,
): Promise<T> {
  let client: C;
  try {
    client = await pool.connect();
  } catch (error) {
    throw unreachable(error);
  }
  // A connection that dies while checked out emits 'error' on the client; unheard, it would end the process.
  const ignoreLostConnection = () => undefined;
  client.on('error', ignoreLostConnection);
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.off('error', ignoreLostConnection);
    client.release();
  }
}

/** The connection URL of a project's owner role on its database, its password derived (never stored). */
export function tenantOwnerUrl(tenantClusterUrl: string, ownerRole: string, password: string, databaseName: string): string {
  const url = new URL(tenantClusterUrl);
  url.username = ownerRole;
  url.password = password;
  url.pathname = `/${databaseName}`;
  return url.toString();
}

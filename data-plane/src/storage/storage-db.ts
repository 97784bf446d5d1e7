/**
 * The storage API's side of a tenant database: per project a small pool of
 * connections as the project's authenticator login, each request's statements as the caller's
 * role with its claims (so the app's RLS policies on `storage.objects`
 * decide), and bucket rules read as `service_role` (buckets are
 * configuration, not data the caller must be allowed to see).
 *
 * Statements travel in batches under one Sync (one-sync.ts), so a request
 * costs few round trips: a read is one batch, an implicit transaction that
 * PostgreSQL commits at the Sync; a transaction that must stay open while
 * the object store acts is one batch that begins it (with the caller's first
 * statements) and one that ends it (with its last ones and COMMIT). An upload
 * first probes its row in a transaction rolled back in the same round trip,
 * streams its bytes holding nothing, and only to publish them holds a
 * transaction, whose lock on the path makes writers of one path publish in
 * turn (contracts' OBJECT_PATH_LOCK_SQL). A request on a
 * bucket reads its rules at the head of its first batch, before the caller's
 * role is taken (`authenticator` is a member of `service_role`, which
 * bypasses RLS): no round trip of their own.
 */
import pg from 'pg';
import { ApiError, notFound, type PlatformLogins } from '@baseplane/contracts';
import type { ConnectionRoom } from '../tenants/connection-room';
import { ProjectPools } from '../tenants/project-pools';
import { BEGIN_STEP, REQUEST_STATEMENT_TIMEOUT_MS, callerSetupStep, wireValues, type Caller } from '../rest/execute';
import { OneSyncBatch, type BatchStep } from '../rest/one-sync';
import { databaseError } from '../rest/db-errors';

/** A bucket's rules, as the upload and the public URL need them. */
export interface BucketRules {
  name: string;
  public: boolean;
  fileSizeLimit: number | null;
  allowedMimeTypes: string[] | null;
}

/** One statement of a batch: a name to parse it once per connection, its text, its parameters. */
export interface StorageStatement {
  name: string;
  text: string;
  values: readonly unknown[];
}

/** A row as PostgreSQL's text format gives it. */
export type TextRow = Record<string, string | null>;

/**
 * The bucket a request acts in: its rules are read first, a missing bucket is
 * 404 whatever the caller's statements answered, and `admit` may refuse the
 * request by its rules (it runs before their answer counts, their error too).
 */
export interface BucketCheck {
  name: string;
  admit?(rules: BucketRules): void;
}

/**
 * A transaction {@link StorageDb.begin} handed over: the rows of its first
 * statements (the caller's, and those it ran as `service_role`), the bucket's
 * rules, and its two ends.
 */
export interface HeldTransaction {
  rows: TextRow[][];
  serviceRows: TextRow[][];
  rules: BucketRules | null;
  /** Runs `statements` and COMMIT in one round trip; answers each statement's rows. */
  commit(statements: readonly StorageStatement[]): Promise<TextRow[][]>;
  /** Rolls back and gives the connection back; nothing when the transaction has ended. */
  rollback(): Promise<void>;
  /**
   * After a commit that failed: `rolled back` when PostgreSQL answered it with
   * an error (nothing of the transaction stays), `unknown` when the connection
   * went first (the COMMIT may have taken effect). Undefined otherwise.
   */
  failedCommit(): 'rolled back' | 'unknown' | undefined;
}

/** Connections per project and replica for transactions: an upload's while it publishes its bytes. */
const TRANSACTION_POOL_SIZE = 10;
/** Connections per project and replica for one-round-trip reads and writes (listings, downloads, signed URLs). */
const STATEMENT_POOL_SIZE = 5;
/**
 * How long a request waits for a connection of its project's pool before it
 * answers 503 (PostgREST's db-pool-acquisition-timeout is 10 s too). Slow
 * uploads holding every connection made the wait endless.
 */
export const CONNECT_WAIT_MS = 10_000;

const SERVICE: Caller = { role: 'service_role', claims: null };
const COMMIT: BatchStep = { name: 'bp_commit', text: 'commit', values: [] };
const ROLLBACK: BatchStep = { name: 'bp_rollback', text: 'rollback', values: [] };
/** A bucket's rules in PostgreSQL's text format: `public` as t/f, the allow-list as JSON. */
const BUCKET_RULES = "select public, file_size_limit, array_to_json(allowed_mime_types) as allowed_mime_types from storage.buckets where name = $1";
/** The platform's own rights for the rest of the transaction (`authenticator` is a member of `service_role`). */
export const AS_SERVICE: StorageStatement = { name: 'bp_storage_as_service', text: "select pg_catalog.set_config('role', 'service_role', true)", values: [] };

function toStep(statement: StorageStatement): BatchStep {
  return { name: statement.name, text: statement.text, values: wireValues(statement.values), describe: true };
}

/** A failure as the caller gets it: an ApiError as it is, a database error as the data API maps it (a policy refusal 401 for anon, 403 otherwise). */
function mapped(error: unknown, caller: Caller): unknown {
  return error instanceof ApiError ? error : (databaseError(error, caller.role) ?? error);
}

function toRules(name: string, row: TextRow | undefined): BucketRules {
  if (!row) throw notFound('bucket');
  return {
    name,
    public: row.public === 't',
    fileSizeLimit: row.file_size_limit === null ? null : Number(row.file_size_limit),
    allowedMimeTypes: row.allowed_mime_types === null ? null : (JSON.parse(row.allowed_mime_types!) as string[]),
  };
}

/**
 * The steps that read `bucket`'s rules as `service_role` ahead of the
 * caller's setup, and how to take the rules from the batch's answers (the
 * first two of them): 404 when the bucket is missing, then `admit`'s refusal.
 */
function bucketSteps(bucket: BucketCheck | undefined): { steps: BatchStep[]; rules(answered: TextRow[][]): BucketRules | null } {
  if (!bucket) return { steps: [], rules: () => null };
  return {
    steps: [toStep(AS_SERVICE), toStep({ name: 'bp_storage_bucket', text: BUCKET_RULES, values: [bucket.name] })],
    rules(answered) {
      if (answered.length < 2) return null; // the batch failed before the rules were read
      const rules = toRules(bucket.name, answered[1]![0]);
      bucket.admit?.(rules);
      return rules;
    },
  };
}

/**
 * Sends `steps` as one batch on `client`; answers the rows of each. When it
 * fails after the bucket's rules were read, `rulesOf` speaks first (a missing
 * bucket, a refusal by its rules), else the batch's error stands.
 */
async function runBatch(client: pg.PoolClient, steps: BatchStep[], rulesOf?: (answered: TextRow[][]) => unknown): Promise<TextRow[][]> {
  const batch = new OneSyncBatch(steps);
  void client.query(batch);
  try {
    return (await batch.done).map((result) => result.rows);
  } catch (error) {
    rulesOf?.(batch.answered().map((result) => result.rows));
    throw error;
  }
}

export class StorageDb {
  /** One-round-trip work ({@link run}, {@link objectAsService}, {@link probe}). */
  private readonly pools: ProjectPools;
  /**
   * Transactions held while the object store acts ({@link begin}): a store
   * that answers slowly holds these, and one-round-trip work still gets a
   * connection of the other pool.
   */
  private readonly transactionPools: ProjectPools;

  constructor(logins: PlatformLogins, room: ConnectionRoom, options: { connectWaitMs?: number } = {}) {
    const pools = (max: number) => new ProjectPools((projectId) => logins.healing(new pg.Pool({
      connectionString: logins.url(projectId, 'authenticator'),
      max,
      connectionTimeoutMillis: options.connectWaitMs ?? CONNECT_WAIT_MS,
      idleTimeoutMillis: 30_000,
      // Recycled now and then: named statements accumulate per connection.
      maxUses: 20_000,
      // As the data API's: each request's setup sets it again ({@link callerSetupStep}).
      statement_timeout: REQUEST_STATEMENT_TIMEOUT_MS,
      application_name: 'baseplane-storage',
    }), projectId, 'authenticator'), room);
    this.pools = pools(STATEMENT_POOL_SIZE);
    this.transactionPools = pools(TRANSACTION_POOL_SIZE);
  }

  /**
   * The bucket's rules and the row of `path` in it (the version its bytes
   * are stored as; undefined when there is no row), read as `service_role` in
   * one round trip, for the public and signed URLs, which no policy governs;
   * 404 `not_found` when the project has no such bucket.
   */
  objectAsService(projectId: string, bucket: string, path: string): Promise<{ rules: BucketRules; object: { version: string | null } | undefined }> {
    const check = bucketSteps({ name: bucket });
    const row = toStep({ name: 'bp_storage_object_version', text: 'select version from storage.objects where bucket = $1 and path = $2', values: [bucket, path] });
    return this.withClient(SERVICE, projectId, this.pools, async (client) => {
      const answered = await runBatch(client, [...check.steps, row], check.rules);
      const found = answered[check.steps.length]![0];
      return { rules: check.rules(answered)!, object: found ? { version: found.version ?? null } : undefined };
    });
  }

  /**
   * Runs `statements` as `caller` (its role, its claims in
   * `request.jwt.claims`) in one round trip and one transaction; answers each
   * statement's rows. Database errors come back as the data API maps them (a
   * policy refusal is 401 for anon, 403 otherwise). With `bucket`, its rules
   * are read first in the same round trip ({@link BucketCheck}).
   */
  run(projectId: string, caller: Caller, statements: readonly StorageStatement[], bucket?: BucketCheck): Promise<TextRow[][]> {
    const check = bucketSteps(bucket);
    return this.withClient(caller, projectId, this.pools, async (client) => {
      const answered = await runBatch(client, [...check.steps, callerSetupStep(caller), ...statements.map(toStep)], check.rules);
      check.rules(answered);
      return answered.slice(check.steps.length + 1);
    });
  }

  /**
   * Runs `statements` as `caller` in a transaction that is then rolled back,
   * all in one round trip with `bucket`'s rules read ahead of them: whether
   * they pass the caller's policies and the table's constraints, nothing
   * kept. Answers the bucket's rules; refusals come as {@link run}'s do.
   */
  probe(projectId: string, caller: Caller, statements: readonly StorageStatement[], bucket: BucketCheck): Promise<BucketRules> {
    const check = bucketSteps(bucket);
    return this.withClient(caller, projectId, this.pools, async (client, broken) => {
      let answered: TextRow[][];
      try {
        answered = await runBatch(client, [BEGIN_STEP, ...check.steps, callerSetupStep(caller), ...statements.map(toStep), ROLLBACK], (rows) => check.rules(rows.slice(1)));
      } catch (error) {
        // A failed batch leaves its transaction aborted but open (its BEGIN ran).
        await client.query('rollback').catch(broken);
        throw error;
      }
      return check.rules(answered.slice(1))!;
    });
  }

  /**
   * Begins a transaction as `caller` with `first` in one round trip (with
   * `bucket`'s rules read ahead of them, and after the rules `asService`, run
   * as `service_role`) and hands it over open, the rows and the rules with it.
   * Whoever begins it ends it, with {@link HeldTransaction.commit} or
   * {@link HeldTransaction.rollback}: either gives its connection back. Errors
   * are mapped as {@link run}'s are; a failed begin or commit has rolled back
   * already, or lost its connection ({@link HeldTransaction.failedCommit}).
   */
  async begin(
    projectId: string, caller: Caller, first: readonly StorageStatement[], bucket?: BucketCheck, asService: readonly StorageStatement[] = [],
  ): Promise<HeldTransaction> {
    const check = bucketSteps(bucket);
    // Without a bucket to read, nothing has set the role yet: the service's statements take it themselves.
    const service = asService.length === 0 ? [] : [...(bucket ? [] : [toStep(AS_SERVICE)]), ...asService.map(toStep)];
    const { client, release } = await this.acquire(projectId, this.transactionPools);
    let open = true;
    let failed: 'rolled back' | 'unknown' | undefined;
    /** Rolls back (a failed batch leaves the transaction aborted but open) and lets the connection go; once. */
    const rollback = async (): Promise<void> => {
      if (!open) return;
      open = false;
      let broken = false;
      await client.query('rollback').catch(() => { broken = true; });
      release(broken);
    };
    try {
      const answered = await runBatch(client, [BEGIN_STEP, ...check.steps, ...service, callerSetupStep(caller), ...first.map(toStep)], (rows) => check.rules(rows.slice(1)));
      const rules = check.rules(answered.slice(1));
      const serviceFrom = 1 + check.steps.length + service.length - asService.length;
      return {
        rows: answered.slice(serviceFrom + asService.length + 1),
        serviceRows: answered.slice(serviceFrom, serviceFrom + asService.length),
        rules,
        commit: async (statements) => {
          if (!open) throw new Error('the transaction has ended');
          try {
            const committed = await runBatch(client, [...statements.map(toStep), COMMIT]);
            open = false;
            release(false);
            return committed.slice(0, -1);
          } catch (error) {
            // An error PostgreSQL answered ended the transaction (a COMMIT that fails rolls back); a connection lost
            // before an answer may have committed.
            failed = error instanceof pg.DatabaseError && error.severity === 'ERROR' ? 'rolled back' : 'unknown';
            await rollback();
            throw mapped(error, caller);
          }
        },
        rollback,
        failedCommit: () => failed,
      };
    } catch (error) {
      await rollback();
      throw mapped(error, caller);
    }
  }

  /** A pool client of the project (room made for it when the cluster is full), and how to give it back: dropped when `broken`. */
  private async acquire(projectId: string, pools: ProjectPools): Promise<{ client: pg.PoolClient; release(broken: boolean): void }> {
    const client = await pools.connect(projectId);
    // A connection that dies while checked out emits 'error' on the client; unheard, it would end the process.
    const lost = () => undefined;
    client.on('error', lost);
    return {
      client,
      release: (broken) => {
        client.off('error', lost);
        client.release(broken);
      },
    };
  }

  /**
   * A pool client of the project for `use`, released after; dropped instead
   * when `use` calls `broken` (pg's pool drops a lost connection itself).
   */
  private async withClient<T>(caller: Caller, projectId: string, pools: ProjectPools, use: (client: pg.PoolClient, broken: () => void) => Promise<T>): Promise<T> {
    const { client, release } = await this.acquire(projectId, pools);
    let broken = false;
    try {
      return await use(client, () => { broken = true; });
    } catch (error) {
      throw mapped(error, caller);
    } finally {
      release(broken);
    }
  }

  /** Closes a project's pool (deleted project). */
  async drop(projectId: string): Promise<void> {
    await Promise.all([this.pools.drop(projectId), this.transactionPools.drop(projectId)]);
  }

  async closeAll(): Promise<void> {
    await Promise.all([this.pools.closeAll(), this.transactionPools.closeAll()]);
  }
}

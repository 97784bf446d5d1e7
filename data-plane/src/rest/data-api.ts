/**
 * The data API's long-lived parts, made once per process: the tenant pools
 * and the schema cache, kept current by following the project directory's
 * event stream (schema events drop a project's snapshot).
 */
import { dataApiVariables, type PlatformLogins } from '@baseplane/contracts';
import type { ProjectDirectory } from '../directory/project-directory';
import type { AccessTokens } from '../auth/access-tokens';
import type { ConnectionRoom } from '../tenants/connection-room';
import { DataPools, type DataPoolOptions } from './execute';
import type { PlanLimits } from './plan';
import { SchemaCache } from './schema-cache';

export interface DataApi {
  directory: ProjectDirectory;
  tokens: AccessTokens;
  pools: DataPools;
  schemas: SchemaCache;
  /** What every plan is bounded by (the row cap). */
  limits: PlanLimits;
  close(): Promise<void>;
}

export interface DataApiOptions extends DataPoolOptions {
  directory: ProjectDirectory;
  tokens: AccessTokens;
  /** The project logins the data API's connections use (healed when refused). */
  logins: PlatformLogins;
  /** The room the replica's tenant connections share (auth's and storage's too). */
  room: ConnectionRoom;
  /** DATA_API_MAX_ROWS ({@link dataApiMaxRows}); no cap when left out. */
  maxRows?: number;
}

/** DATA_API_POOL_SIZE: connections per project and replica a request may hold alone (default 10, 1 to 100). */
export function dataApiPoolSize(env: Record<string, string | undefined>): number {
  return dataApiVariables(env).poolSize;
}

/** DATA_API_PIPELINES: shared pipelined connections per project and replica (default 2, 0 to 100; 0 turns sharing off). */
export function dataApiPipelines(env: Record<string, string | undefined>): number {
  return dataApiVariables(env).pipelines;
}

/** DATA_API_MAX_ROWS: the most rows a read answers (default 1,000; 0 gives undefined, no cap). */
export function dataApiMaxRows(env: Record<string, string | undefined>): number | undefined {
  return dataApiVariables(env).maxRows;
}

/** Builds the data API's state and subscribes it to the event stream. */
export function createDataApi(options: DataApiOptions): DataApi {
  const pools = new DataPools(options.logins, options.room, options);
  const schemas = new SchemaCache((projectId, schema) => pools.loadSnapshot(projectId, schema));
  const stop = options.directory.onEvent((event) => {
    switch (event.type) {
      case 'SchemaChangeApplied':
      case 'SqlDdlRecorded':
        schemas.invalidate(event.data.projectId);
        pools.schemaChanged(event.data.projectId);
        break;
      case 'ProjectDeleted':
        schemas.invalidate(event.data.projectId);
        void pools.drop(event.data.projectId);
        break;
      default:
        break;
    }
  });
  return {
    directory: options.directory,
    tokens: options.tokens,
    pools,
    schemas,
    limits: options.maxRows === undefined ? {} : { maxRows: options.maxRows },
    async close() {
      stop();
      await pools.closeAll();
    },
  };
}

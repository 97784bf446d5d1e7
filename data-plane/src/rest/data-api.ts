/**
 * The data API's long-lived parts, made once per process: the tenant pools
 * and the schema cache, kept current by following the project directory's
 * event stream (schema events drop a project's snapshot).
 */
import { ConfigError } from '@baseplane/contracts';
import type { ProjectDirectory } from '../directory/project-directory';
import type { AccessTokens } from '../auth/access-tokens';
import { DataPools, type DataPoolOptions } from './execute';
import { SchemaCache } from './schema-cache';

export interface DataApi {
  directory: ProjectDirectory;
  tokens: AccessTokens;
  pools: DataPools;
  schemas: SchemaCache;
  close(): Promise<void>;
}

export interface DataApiOptions extends DataPoolOptions {
  directory: ProjectDirectory;
  tokens: AccessTokens;
  tenantDatabaseUrl: string;
  platformSecret: string;
}

/** DATA_API_POOL_SIZE: connections per project and replica (default 10, 1 to 100). */
export function dataApiPoolSize(env: Record<string, string | undefined>): number {
  const raw = env.DATA_API_POOL_SIZE?.trim();
  if (raw === undefined || raw === '') return 10;
  const size = Number(raw);
  if (!/^\d+$/.test(raw) || size < 1 || size > 100) throw new ConfigError('DATA_API_POOL_SIZE', `must be a whole number from 1 to 100, got "${raw}"`);
  return size;
}

/** Builds the data API's state and subscribes it to the event stream. */
export function createDataApi(options: DataApiOptions): DataApi {
  const pools = new DataPools(options.tenantDatabaseUrl, options.platformSecret, options);
  const schemas = new SchemaCache((projectId) => pools.loadSnapshot(projectId));
  const stop = options.directory.onEvent((event) => {
    switch (event.type) {
      case 'SchemaChangeApplied':
      case 'SqlDdlRecorded':
        schemas.invalidate(event.data.projectId);
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
    async close() {
      stop();
      await pools.closeAll();
    },
  };
}

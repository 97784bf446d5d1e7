/**
 * Who is calling the operator API: an operator with a platform JWT, or a
 * project's service key. The anon key is never enough here.
 */
import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import { ApiError, IdParam, hashApiKey, notFound, projectUnavailable, validate } from '@baseplane/contracts';
import type { PlatformTokenService } from '../accounts/platform-tokens';

export type Caller =
  | { kind: 'operator'; accountId: string; email: string }
  | { kind: 'service'; projectId: string };

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers.apikey;
  if (typeof header === 'string' && header !== '') return header;
  const query = (request.query as Record<string, unknown> | undefined)?.apikey;
  return typeof query === 'string' && query !== '' ? query : undefined;
}

/** A query string without `apikey`, which is how the service key may travel (API.md → Credentials), not a parameter of the call. */
export function withoutApiKey(query: unknown): Record<string, unknown> {
  const { apikey: _key, ...parameters } = (query ?? {}) as Record<string, unknown>;
  return parameters;
}

type Operator = Extract<Caller, { kind: 'operator' }>;

function onlyOperator(caller: Caller, why = 'a platform token is required for this endpoint'): Operator {
  if (caller.kind !== 'operator') throw new ApiError(403, 'forbidden', why);
  return caller;
}

export class CallerResolver {
  constructor(private readonly db: Pool, private readonly tokens: PlatformTokenService) {}

  /** Who a request is, worked out once per request however many checks ask. */
  private readonly resolved = new WeakMap<FastifyRequest, Promise<Caller>>();

  resolve(request: FastifyRequest): Promise<Caller> {
    let caller = this.resolved.get(request);
    if (!caller) {
      caller = this.identify(request);
      this.resolved.set(request, caller);
    }
    return caller;
  }

  private async identify(request: FastifyRequest): Promise<Caller> {
    const authorization = request.headers.authorization;
    if (authorization) {
      const match = /^Bearer\s+(\S+)$/i.exec(authorization);
      if (!match) throw new ApiError(401, 'invalid_token', 'Authorization must be "Bearer <token>"');
      return { kind: 'operator', ...(await this.tokens.verify(match[1]!)) };
    }
    const key = apiKeyOf(request);
    if (!key) throw new ApiError(401, 'invalid_token', 'a platform token (Authorization: Bearer) or a service key (apikey) is required');
    const hash = hashApiKey(key);
    const { rows } = await this.db.query<{ id: string; kind: string }>(
      `select id, case when anon_key_hash = $1 then 'anon' else 'service' end as kind
       from projects where (anon_key_hash = $1 or service_key_hash = $1) and status <> 'deleted'`,
      [hash],
    );
    const row = rows[0];
    if (!row) throw new ApiError(401, 'invalid_api_key', 'invalid API key');
    if (row.kind === 'anon') throw new ApiError(403, 'service_key_required', 'the anon key cannot use the management API; use the service key or a platform token');
    return { kind: 'service', projectId: row.id };
  }

  /** An operator is required (project keys cannot create or list projects). */
  async operator(request: FastifyRequest): Promise<Operator> {
    return onlyOperator(await this.resolve(request));
  }

  /**
   * A member of the project's team, not a key. The project is checked first,
   * so another project's key is 401 here as everywhere (API.md → Credentials)
   * and only the project's own service key is told `why`, 403.
   */
  async operatorOf(request: FastifyRequest, projectId: string, why?: string): Promise<Operator> {
    return onlyOperator((await this.forProject(request, projectId)).caller, why);
  }

  /**
   * The caller may act on this project: a member of its team, or its own
   * service key. Another team's member is told 404, as if it did not exist.
   */
  async forProject(request: FastifyRequest, projectId: string): Promise<{ caller: Caller; teamId: string; status: string }> {
    const caller = await this.resolve(request);
    const { rows } = await this.db.query<{ team_id: string; status: string }>('select team_id, status from projects where id = $1', [projectId]);
    const project = rows[0];
    if (caller.kind === 'service') {
      if (caller.projectId !== projectId) throw new ApiError(401, 'invalid_api_key', 'this key belongs to another project');
      return { caller, teamId: project!.team_id, status: project!.status };
    }
    if (!project) throw notFound('project');
    const member = await this.db.query('select 1 from team_members where team_id = $1 and account_id = $2', [project.team_id, caller.accountId]);
    if (member.rowCount === 0) throw notFound('project');
    return { caller, teamId: project.team_id, status: project.status };
  }

  /** As `forProject`, and the project's database must be serving (else 503 `project_unavailable`). */
  async forActiveProject(request: FastifyRequest, projectId: string): Promise<{ caller: Caller; teamId: string }> {
    const access = await this.forProject(request, projectId);
    if (access.status !== 'active') throw projectUnavailable(access.status);
    return access;
  }

  /** The project id of the path, once it is a UUID and the caller may act on that active project. */
  async activeProjectId(request: FastifyRequest, rawId: string): Promise<string> {
    const { id } = validate(IdParam, { id: rawId }, 'path');
    await this.forActiveProject(request, id);
    return id;
  }
}

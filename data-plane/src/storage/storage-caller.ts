/**
 * Who is calling a storage object endpoint (`/api/projects/:id/storage/…/objects`),
 * and as which database role its statements run (API.md → Credentials):
 *
 * - an operator's platform JWT (no apikey): a member of the project's team, as
 *   `service_role`; anyone else is told 404, as the control plane does;
 * - the project's service key: `service_role`, bypassing RLS;
 * - the anon key: `anon`, or `authenticated` with a valid end-user token of the
 *   project, so the app's RLS policies on `storage.objects` decide.
 *
 * A key or token of another project is 401 and never falls back to anon.
 */
import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import { ApiError, IdParam, hashApiKey, notFound, validate, verifyPlatformToken } from '@baseplane/contracts';
import type { DirectoryEntry, ProjectDirectory } from '../directory/project-directory';
import type { AccessTokens } from '../auth/access-tokens';
import { apiKeyOf } from '../http/resolve-project';
import type { Caller } from '../rest/execute';

/** A resolved storage caller: the project it acts on and its role there. */
export interface StorageAccess {
  project: DirectoryEntry;
  caller: Caller;
}

export class StorageCallers {
  constructor(
    private readonly directory: ProjectDirectory,
    private readonly tokens: AccessTokens,
    private readonly platformDb: Pool,
    private readonly platformKey: Uint8Array,
  ) {}

  /** The caller of a request on the project of the path (`rawProjectId`, checked to be a UUID). */
  async resolve(request: FastifyRequest, rawProjectId: string): Promise<StorageAccess> {
    const { id: projectId } = validate(IdParam, { id: rawProjectId }, 'path');
    const bearer = bearerOf(request);
    const key = apiKeyOf(request);
    if (key) return this.byKey(key, bearer, projectId);
    if (bearer) return this.byOperator(bearer, projectId);
    throw new ApiError(401, 'invalid_token', 'a platform token (Authorization: Bearer) or a project API key (apikey) is required');
  }

  private async byKey(key: string, bearer: string | undefined, projectId: string): Promise<StorageAccess> {
    const match = this.directory.lookupKey(hashApiKey(key));
    if (!match) throw new ApiError(401, 'invalid_api_key', 'invalid API key');
    if (match.project.projectId !== projectId) throw new ApiError(401, 'invalid_api_key', 'this key belongs to another project');
    const project = active(match.project);
    if (match.kind === 'service') return { project, caller: { role: 'service_role', claims: null } };
    // Supabase clients send the anon key itself as the Bearer when no user is signed in: that is not a user token.
    if (!bearer || bearer === key) return { project, caller: { role: 'anon', claims: null } };
    const claims = await this.tokens.verify(project, bearer);
    return { project, caller: { role: 'authenticated', claims: { ...claims } } };
  }

  private async byOperator(token: string, projectId: string): Promise<StorageAccess> {
    const { accountId } = await verifyPlatformToken(this.platformKey, token);
    const project = this.directory.project(projectId);
    if (!project) throw notFound('project');
    const member = await this.platformDb.query(
      'select 1 from projects p join team_members m on m.team_id = p.team_id where p.id = $1 and m.account_id = $2',
      [projectId, accountId],
    );
    if (member.rowCount === 0) throw notFound('project');
    return { project: active(project), caller: { role: 'service_role', claims: null } };
  }
}

function active(project: DirectoryEntry): DirectoryEntry {
  if (project.status !== 'active') throw new ApiError(503, 'project_unavailable', `project is ${project.status}`);
  return project;
}

/** The token of `Authorization: Bearer <token>`; 401 when the header is there but malformed. */
function bearerOf(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization === undefined || authorization === '') return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (!match) throw new ApiError(401, 'invalid_token', 'the Authorization header must be "Bearer <token>"');
  return match[1]!;
}

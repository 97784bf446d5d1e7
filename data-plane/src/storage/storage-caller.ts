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
import { ApiError, IdParam, notFound, validate, verifyPlatformToken } from '@baseplane/contracts';
import type { DirectoryEntry, ProjectDirectory } from '../directory/project-directory';
import type { AccessTokens } from '../auth/access-tokens';
import { apiKeyOf, bearerOf, resolveApiCaller } from '../http/resolve-project';
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
    if (apiKeyOf(request)) return this.byKey(request, projectId);
    const bearer = bearerOf(request);
    if (bearer) return this.byOperator(bearer, projectId);
    throw new ApiError(401, 'invalid_token', 'a platform token (Authorization: Bearer) or a project API key (apikey) is required');
  }

  /** As on the data API (the key's role, `authenticated` with a user token), for the project of the path only. */
  private async byKey(request: FastifyRequest, projectId: string): Promise<StorageAccess> {
    const access = await resolveApiCaller(this.directory, this.tokens, request);
    if (access.project.projectId !== projectId) throw new ApiError(401, 'invalid_api_key', 'this key belongs to another project');
    return access;
  }

  private async byOperator(token: string, projectId: string): Promise<StorageAccess> {
    const { accountId } = await verifyPlatformToken(this.platformKey, token);
    const project = this.directory.project(projectId);
    if (!project) throw notFound('project');
    // Named, so each connection parses and plans it once: unnamed, that was most of PostgreSQL's work per operator request.
    const member = await this.platformDb.query({
      name: 'bp_storage_member',
      text: 'select 1 from projects p join team_members m on m.team_id = p.team_id where p.id = $1 and m.account_id = $2',
      values: [projectId, accountId],
    });
    if (member.rowCount === 0) throw notFound('project');
    return { project: active(project), caller: { role: 'service_role', claims: null } };
  }
}

function active(project: DirectoryEntry): DirectoryEntry {
  if (project.status !== 'active') throw new ApiError(503, 'project_unavailable', `project is ${project.status}`);
  return project;
}

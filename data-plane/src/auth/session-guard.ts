/**
 * Who is signed in on an auth request: the verified access token of a live
 * session of the project the apikey names. Only `GET /me` takes the token
 * alone (spec §4.2); without the apikey its project is the token's `ref` claim.
 */
import type { FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import { ApiError, projectUnavailable, type AccessTokenClaims } from '@baseplane/contracts';
import * as store from '@baseplane/contracts/user-directory';
import type { DirectoryEntry, ProjectDirectory } from '../directory/project-directory';
import { apiKeyOf, resolveProject } from '../http/resolve-project';
import type { AuthDependencies } from './dependencies';

export interface SignedIn {
  project: DirectoryEntry;
  claims: AccessTokenClaims;
  /** The user as the request found them. */
  user: store.StoredUser;
}

export interface AuthenticateOptions {
  /** True for `GET /me` alone: the apikey may be left out. */
  tokenAlone?: boolean;
}

export async function authenticate(deps: AuthDependencies, request: FastifyRequest, options: AuthenticateOptions = {}): Promise<SignedIn> {
  // The apikey first, as on every other endpoint: its absence is 401 missing_api_key whatever else is sent.
  const keyed = options.tokenAlone && !apiKeyOf(request) ? undefined : resolveProject(deps.directory, request).project;
  const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  if (!match) throw new ApiError(401, 'no_session', 'Authorization: Bearer <access token> is required');
  const token = match[1]!;
  const project = keyed ?? projectOfToken(deps.directory, token);
  const claims = await deps.tokens.verify(project, token);
  const user = await deps.tenants.quick(project.projectId, (db) => store.findSessionUser(db, claims.session_id, claims.sub));
  if (!user) throw new ApiError(401, 'invalid_token', 'the session of this token has ended');
  return { project, claims, user };
}

/** The project a token names, before its signature is checked (verify() checks it against that project's keys). */
function projectOfToken(directory: ProjectDirectory, token: string): DirectoryEntry {
  let ref: unknown;
  try {
    ref = decodeJwt(token).ref;
  } catch {
    throw new ApiError(401, 'invalid_token', 'invalid access token');
  }
  const project = typeof ref === 'string' ? directory.project(ref) : undefined;
  if (!project || project.status === 'deleted') throw new ApiError(401, 'invalid_token', 'invalid access token');
  if (project.status !== 'active') throw projectUnavailable(project.status);
  return project;
}

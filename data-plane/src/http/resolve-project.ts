/**
 * First step of every data-plane request: the `apikey` (header or query)
 * names the project and the role. Missing ⇒ 401 `missing_api_key`, unknown ⇒
 * 401 `invalid_api_key`, project not serving ⇒ 503 `project_unavailable`.
 * With it, a Bearer end-user token of that project makes the caller
 * `authenticated`; a bad token is 401 and never falls back to anon.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError, hashApiKey, projectUnavailable, setBounded } from '@baseplane/contracts';
import type { AccessTokens } from '../auth/access-tokens';
import type { DirectoryEntry, KeyMatch, ProjectDirectory } from '../directory/project-directory';
import type { Caller } from '../rest/execute';

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers.apikey;
  if (typeof header === 'string' && header !== '') return header;
  const query = (request.query as Record<string, unknown> | undefined)?.apikey;
  return typeof query === 'string' && query !== '' ? query : undefined;
}

/** How many keys' hashes are remembered; the oldest goes first. */
const MAX_KEY_HASHES = 1_000;
const keyHashes = new Map<string, string>();

/**
 * The directory's form of `key`: its sha256, remembered for the keys that
 * matched a project, since every request of an app sends the same one.
 * Whether it still matches is asked of the directory each time, so a
 * rotated-away key stops working at once.
 */
function keyHashOf(key: string, directory: ProjectDirectory): string {
  const known = keyHashes.get(key);
  if (known !== undefined) return known;
  const hash = hashApiKey(key);
  if (directory.lookupKey(hash)) {
    setBounded(keyHashes, key, hash, MAX_KEY_HASHES);
  }
  return hash;
}

export function resolveProject(directory: ProjectDirectory, request: FastifyRequest): KeyMatch {
  const key = apiKeyOf(request);
  if (!key) throw new ApiError(401, 'missing_api_key', 'no API key found in the apikey header or query parameter', null, 'send the project anon key as the apikey header');
  const match = directory.lookupKey(keyHashOf(key, directory));
  if (!match) throw new ApiError(401, 'invalid_api_key', 'invalid API key');
  if (match.project.status !== 'active') {
    throw projectUnavailable(match.project.status);
  }
  return match;
}

/** The token of `Authorization: Bearer <token>`; undefined without the header, 401 when it is malformed. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization === undefined || authorization === '') return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (!match) throw new ApiError(401, 'invalid_token', 'the Authorization header must be "Bearer <token>"');
  return match[1]!;
}

/**
 * The user's token a request carries: its Bearer, unless that is the API key
 * itself, which Supabase-style clients send as the Bearer when no user is
 * signed in (no session, then).
 */
export function userTokenOf(request: FastifyRequest): string | undefined {
  const bearer = bearerOf(request);
  return bearer !== undefined && bearer !== apiKeyOf(request) ? bearer : undefined;
}

/** The project and the database role of a request carrying an API key: its key's role, `authenticated` with a verified user token. */
export async function resolveApiCaller(directory: ProjectDirectory, tokens: AccessTokens, request: FastifyRequest): Promise<{ project: DirectoryEntry; caller: Caller }> {
  const { project, kind } = resolveProject(directory, request);
  const token = userTokenOf(request);
  const claims = token !== undefined ? { ...(await tokens.verify(project, token)) } : null;
  if (kind === 'service') return { project, caller: { role: 'service_role', claims: claims && { ...claims, role: 'service_role' } } };
  return { project, caller: claims ? { role: 'authenticated', claims } : { role: 'anon', claims: null } };
}

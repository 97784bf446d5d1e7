/**
 * First step of every data-plane request: the `apikey` (header or query)
 * names the project and the role. Missing ⇒ 401 `missing_api_key`, unknown ⇒
 * 401 `invalid_api_key`, project not serving ⇒ 503 `project_unavailable`.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError, hashApiKey } from '@baseplane/contracts';
import type { KeyMatch, ProjectDirectory } from '../directory/project-directory';

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers.apikey;
  if (typeof header === 'string' && header !== '') return header;
  const query = (request.query as Record<string, unknown> | undefined)?.apikey;
  return typeof query === 'string' && query !== '' ? query : undefined;
}

export function resolveProject(directory: ProjectDirectory, request: FastifyRequest): KeyMatch {
  const key = apiKeyOf(request);
  if (!key) throw new ApiError(401, 'missing_api_key', 'no API key found in the apikey header or query parameter', null, 'send the project anon key as the apikey header');
  const match = directory.lookupKey(hashApiKey(key));
  if (!match) throw new ApiError(401, 'invalid_api_key', 'invalid API key');
  if (match.project.status !== 'active') {
    throw new ApiError(503, 'project_unavailable', `project is ${match.project.status}`);
  }
  return match;
}

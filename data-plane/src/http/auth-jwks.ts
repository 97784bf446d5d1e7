/**
 * `GET /rest/v1/auth/.well-known/jwks.json`: the public keys that verify the
 * project's end-user access tokens (ES256), for any party that wants to check
 * a token without calling us. Public parts only.
 */
import type { FastifyInstance } from 'fastify';
import type { ProjectDirectory } from '../directory/project-directory';
import { resolveProject } from './resolve-project';

const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'] as const;

export function bindAuthJwks(app: FastifyInstance, directory: ProjectDirectory): void {
  app.get('/auth/.well-known/jwks.json', async (request, reply) => {
    const { project } = resolveProject(directory, request);
    void reply.header('cache-control', 'public, max-age=300');
    return {
      keys: project.signingKeys.map((key) => Object.fromEntries(PUBLIC_MEMBERS.filter((m) => key.publicJwk[m] !== undefined).map((m) => [m, key.publicJwk[m]]))),
    };
  });
}

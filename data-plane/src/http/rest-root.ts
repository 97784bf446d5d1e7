/**
 * `GET /rest/v1/`: the project's OpenAPI description. Its paths come from the
 * schema cache once tables are served; until then it describes an empty API.
 */
import type { FastifyInstance } from 'fastify';
import type { ProjectDirectory } from '../directory/project-directory';
import { resolveProject } from './resolve-project';

export function bindRestRoot(app: FastifyInstance, directory: ProjectDirectory, publicUrl: string): void {
  app.get('/', async (request, reply) => {
    const { project } = resolveProject(directory, request);
    void reply.header('content-type', 'application/openapi+json; charset=utf-8');
    return {
      openapi: '3.0.3',
      info: { title: project.name, version: '1', description: `REST data API of project ${project.projectId}` },
      servers: [{ url: `${publicUrl}/rest/v1` }],
      paths: {},
      components: {
        schemas: {},
        securitySchemes: { apikey: { type: 'apiKey', in: 'header', name: 'apikey' } },
      },
      security: [{ apikey: [] }],
    };
  });
}

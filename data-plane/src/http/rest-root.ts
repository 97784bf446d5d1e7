/**
 * `GET /rest/v1/`: the project's OpenAPI description, its paths taken from
 * the data API's schema cache (tables, views, functions of schema public).
 */
import type { FastifyInstance } from 'fastify';
import type { ProjectDirectory } from '../directory/project-directory';
import type { DataApi } from '../rest/data-api';
import { openApiOf } from '../rest/openapi';
import { snapshotOf } from '../rest/schema-model';
import { resolveProject } from './resolve-project';

export function bindRestRoot(app: FastifyInstance, directory: ProjectDirectory, publicUrl: string, dataApi?: DataApi): void {
  app.get('/', async (request, reply) => {
    const { project } = resolveProject(directory, request);
    // Without the data API (a test building the app alone) the description is of an empty schema.
    const snapshot = dataApi ? await dataApi.schemas.get(project.projectId) : snapshotOf({ relations: [] });
    void reply.header('content-type', 'application/openapi+json; charset=utf-8');
    return openApiOf(snapshot, { title: project.name, description: `REST data API of project ${project.projectId}`, serverUrl: `${publicUrl}/rest/v1` });
  });
}

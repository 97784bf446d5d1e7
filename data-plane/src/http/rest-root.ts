/**
 * `GET /rest/v1/`: the project's OpenAPI description, its paths taken from
 * the data API's schema cache (tables, views, functions of the schema
 * `Accept-Profile` asks for, `public` by default).
 */
import type { FastifyInstance } from 'fastify';
import type { ProjectDirectory } from '../directory/project-directory';
import type { DataApi } from '../rest/data-api';
import { openApiOf } from '../rest/openapi';
import { profileOf, sendProfile } from '../rest/profile';
import { snapshotOf } from '../rest/schema-model';
import { resolveProject } from './resolve-project';

export function bindRestRoot(app: FastifyInstance, directory: ProjectDirectory, publicUrl: string, dataApi?: DataApi): void {
  app.get('/', async (request, reply) => {
    const { project } = resolveProject(directory, request);
    // The schema `Accept-Profile` asks for among those the project exposes, as the data API's reads choose it.
    const exposed = project.restSettings.exposedSchemas;
    const schema = profileOf('GET', request.headers, exposed);
    // Without the data API (a test building the app alone) the description is of an empty schema.
    const snapshot = dataApi ? await dataApi.schemas.get(project.projectId, schema) : snapshotOf({ schema, relations: [] });
    void reply.header('content-type', 'application/openapi+json; charset=utf-8');
    sendProfile(reply, schema, exposed);
    return openApiOf(snapshot, { title: project.name, description: `REST data API of project ${project.projectId}`, serverUrl: `${publicUrl}/rest/v1` });
  });
}

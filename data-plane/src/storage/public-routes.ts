/**
 * Objects read without a key (API.md → Storage): `/storage/v1/object/public/…`
 * for public buckets, `/storage/v1/object/sign/…?token=` for a signed URL.
 * A private bucket's object is not served at the public URL, and is told apart
 * from a missing one by nothing. Either URL serves an object only while its
 * row is there, and the bytes of the version its row names: bytes the store
 * holds without one (an upload that failed after storing them, a version
 * replaced or deleted since) are no object.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, IdParam, validate } from '@baseplane/contracts';
import { objectKey, objectNotFound } from '@baseplane/contracts/object-store';
import type { ProjectDirectory } from '../directory/project-directory';
import { bindCors } from '../http/cors';
import { checkObjectPath, routeParams } from './object-routes';
import type { ObjectAddress } from './object-urls';
import type { Storage } from './storage';
import { sendObject } from './send-object';

/** The object a URL names, its project serving; a bucket name or path no object can have is refused as the object routes refuse it. */
function addressOf(directory: ProjectDirectory, request: FastifyRequest): ObjectAddress {
  const params = request.params as { projectId: string; bucket: string; '*': string };
  const { id: projectId } = validate(IdParam, { id: params.projectId }, 'path');
  const project = directory.project(projectId);
  if (!project) throw new ApiError(404, 'not_found', 'object not found');
  if (project.status !== 'active') throw new ApiError(503, 'project_unavailable', `project is ${project.status}`);
  const { bucket } = routeParams(request);
  const path = params['*'];
  checkObjectPath(projectId, bucket, path);
  return { projectId, bucket, path };
}

export function bindPublicObjectRoutes(app: FastifyInstance, directory: ProjectDirectory, storage: Storage): void {
  void app.register(
    async (scope) => {
      bindCors(scope);

      // HEAD is ours, not Fastify's generated one, which answers content-length 0 for a body it does not get.
      scope.route({ method: ['GET', 'HEAD'], url: '/public/:projectId/:bucket/*', handler: async (request, reply) => {
        const address = addressOf(directory, request);
        // The key of the version the row names, the bucket public; read again should its bytes be gone (see sendObject).
        const stored = async () => {
          const found = await storage.db.objectAsService(address.projectId, address.bucket, address.path).catch((error) => {
            if (error instanceof ApiError && error.status === 404) return undefined;
            throw error;
          });
          if (!found?.rules.public) throw new ApiError(404, 'not_found', `no public bucket named "${address.bucket}"`, null, 'objects of private buckets are read through signed URLs');
          if (!found.object) throw objectNotFound();
          return objectKey(address.projectId, address.bucket, address.path, found.object.version);
        };
        return sendObject(storage.store, await stored(), request, reply, 'public, max-age=60', stored);
      } });

      scope.route({ method: ['GET', 'HEAD'], url: '/sign/:projectId/:bucket/*', handler: async (request, reply) => {
        const address = addressOf(directory, request);
        const token = (request.query as { token?: unknown }).token;
        if (typeof token !== 'string' || token === '') throw new ApiError(400, 'invalid_request', 'the signed URL has no token');
        await storage.urls.verify(address, token);
        // Signed for a path, in whichever bucket, private or public: what is served is the object its row says is there.
        const stored = async () => {
          const found = await storage.db.objectAsService(address.projectId, address.bucket, address.path);
          if (!found.object) throw objectNotFound();
          return objectKey(address.projectId, address.bucket, address.path, found.object.version);
        };
        return sendObject(storage.store, await stored(), request, reply, 'private, max-age=60', stored);
      } });
    },
    { prefix: '/storage/v1/object' },
  );
}

/**
 * Bucket decisions: a bucket command against the project's state and the
 * tenant's live `storage.buckets`, to events or a refusal (400/404/409)
 * before anything is recorded. Pure: the buckets are passed in.
 */
import { ApiError, MAX_BUCKETS, checkBucketName, notFound, projectUnavailable, type BucketCommand, type BucketEvent } from '@baseplane/contracts';
import type { BucketFacts } from '../tenants/storage-buckets';
import type { ProjectState } from './project';

/** The bucket named, not being deleted (one being deleted is already going: nothing more is decided about it). */
function bucket(buckets: BucketFacts[], name: string): BucketFacts {
  const found = buckets.find((b) => b.name === name && !b.deleting);
  if (!found) throw notFound(`bucket "${name}"`);
  return found;
}

export function decideBucket(command: BucketCommand, project: ProjectState, buckets: BucketFacts[]): BucketEvent[] {
  if (project.status === 'none' || project.status === 'deleted') throw notFound('project');
  if (project.status !== 'active') throw projectUnavailable(project.status);
  const { projectId } = command.data;
  switch (command.type) {
    case 'CreateBucket': {
      const spec = command.data.bucket;
      checkBucketName(spec.name);
      const taken = buckets.find((b) => b.name === spec.name);
      if (taken?.deleting) {
        throw new ApiError(409, 'already_exists', `bucket "${spec.name}" is being deleted`, null, 'create it again once its deletion is applied (its operation succeeded)');
      }
      if (taken) throw new ApiError(409, 'already_exists', `bucket "${spec.name}" already exists`);
      if (buckets.length >= MAX_BUCKETS) throw new ApiError(400, 'invalid_request', `a project has at most ${MAX_BUCKETS} buckets`);
      return [{ type: 'BucketCreated', data: { projectId, bucket: spec } }];
    }
    case 'UpdateBucket': {
      // Recorded even when the value is already the one asked for: the operator's toggle is history, and applying it changes nothing.
      const target = bucket(buckets, command.data.name);
      return [{ type: 'BucketUpdated', data: { projectId, name: target.name, public: command.data.public } }];
    }
    case 'DeleteBucket': {
      // Already being deleted: nothing more to record; the request follows the deletion under way.
      if (buckets.some((b) => b.name === command.data.name && b.deleting)) return [];
      const target = bucket(buckets, command.data.name);
      if (target.hasObjects && !command.data.force) {
        throw new ApiError(409, 'bucket_not_empty', `bucket "${target.name}" is not empty`, null, 'delete its objects first, or delete it with ?force=true to empty it');
      }
      return [{ type: 'BucketDeletionRequested', data: { projectId, name: target.name, force: command.data.force } }];
    }
  }
}

/** given(project state, tenant's buckets).when(bucket command).then(events | refusal). */
import { describe, expect, it } from 'vitest';
import { ApiError, MAX_BUCKETS, type BucketCommand, type BucketSpec } from '@baseplane/contracts';
import { withPendingBuckets, type PendingChange } from '../src/domain/pending-changes';
import { decideBucket } from '../src/domain/storage';
import { initialState, type ProjectState } from '../src/domain/project';
import type { BucketFacts } from '../src/tenants/storage-buckets';

const projectId = 'p1';
const active: ProjectState = { ...initialState(), status: 'active', name: 'p', teamId: 't' };
const avatars: BucketFacts = { name: 'avatars', public: false, hasObjects: false };
const photos: BucketFacts = { name: 'photos', public: true, hasObjects: true };
const spec = (name: string): BucketSpec => ({ name, public: false, fileSizeLimit: null, allowedMimeTypes: null });

function refusal(command: BucketCommand, state = active, buckets = [avatars, photos]): { status: number; code: string } {
  try {
    decideBucket(command, state, buckets);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return { status: (error as ApiError).status, code: (error as ApiError).code };
  }
  throw new Error('expected a refusal');
}

describe('bucket decider', () => {
  it('creates a bucket whose name is free', () => {
    const bucket = { name: 'docs', public: true, fileSizeLimit: 1024, allowedMimeTypes: ['image/*'] };
    expect(decideBucket({ type: 'CreateBucket', data: { projectId, bucket } }, active, [avatars])).toEqual([{ type: 'BucketCreated', data: { projectId, bucket } }]);
  });

  it('refuses a taken name with 409 and a name S3 would not take with 400', () => {
    expect(refusal({ type: 'CreateBucket', data: { projectId, bucket: spec('avatars') } })).toEqual({ status: 409, code: 'already_exists' });
    expect(refusal({ type: 'CreateBucket', data: { projectId, bucket: spec('Bad_Name') } })).toEqual({ status: 400, code: 'invalid_request' });
  });

  it('refuses a bucket past the per-project cap', () => {
    const many = Array.from({ length: MAX_BUCKETS }, (_, i) => ({ name: `b-${i}`, public: false, hasObjects: false }));
    expect(refusal({ type: 'CreateBucket', data: { projectId, bucket: spec('one-more') } }, active, many).status).toBe(400);
  });

  it('toggles public, recording the toggle even when the value is already that', () => {
    expect(decideBucket({ type: 'UpdateBucket', data: { projectId, name: 'avatars', public: true } }, active, [avatars])).toEqual([
      { type: 'BucketUpdated', data: { projectId, name: 'avatars', public: true } },
    ]);
    expect(decideBucket({ type: 'UpdateBucket', data: { projectId, name: 'photos', public: true } }, active, [photos])).toHaveLength(1);
  });

  it('deletes an empty bucket, and a non-empty one only with force', () => {
    expect(decideBucket({ type: 'DeleteBucket', data: { projectId, name: 'avatars', force: false } }, active, [avatars, photos])).toEqual([
      { type: 'BucketDeletionRequested', data: { projectId, name: 'avatars', force: false } },
    ]);
    expect(refusal({ type: 'DeleteBucket', data: { projectId, name: 'photos', force: false } })).toEqual({ status: 409, code: 'bucket_not_empty' });
    expect(decideBucket({ type: 'DeleteBucket', data: { projectId, name: 'photos', force: true } }, active, [avatars, photos])).toEqual([
      { type: 'BucketDeletionRequested', data: { projectId, name: 'photos', force: true } },
    ]);
  });

  it('refuses an unknown bucket with 404', () => {
    expect(refusal({ type: 'UpdateBucket', data: { projectId, name: 'nope', public: true } })).toEqual({ status: 404, code: 'not_found' });
    expect(refusal({ type: 'DeleteBucket', data: { projectId, name: 'nope', force: true } })).toEqual({ status: 404, code: 'not_found' });
  });

  it('keeps a bucket whose deletion is recorded but not applied: its name stays taken, nothing more is decided about it', () => {
    // A deletion without force fails when applied if objects came meanwhile; a create decided as if the name were free would then fail too.
    const pending: PendingChange[] = [{ version: 7, event: { type: 'BucketDeletionRequested', data: { projectId, name: 'avatars', force: false } } }];
    const buckets = withPendingBuckets([avatars, photos], pending);
    expect(buckets).toEqual([{ ...avatars, deleting: true }, photos]);
    expect(refusal({ type: 'CreateBucket', data: { projectId, bucket: spec('avatars') } }, active, buckets)).toEqual({ status: 409, code: 'already_exists' });
    expect(refusal({ type: 'UpdateBucket', data: { projectId, name: 'avatars', public: true } }, active, buckets)).toEqual({ status: 404, code: 'not_found' });
    // Deleting it again records nothing: the request follows the deletion under way (buckets.controller).
    expect(decideBucket({ type: 'DeleteBucket', data: { projectId, name: 'avatars', force: true } }, active, buckets)).toEqual([]);
    // It counts against the cap until it is gone.
    const many = Array.from({ length: MAX_BUCKETS - 1 }, (_, i) => ({ name: `b-${i}`, public: false, hasObjects: false }));
    expect(refusal({ type: 'CreateBucket', data: { projectId, bucket: spec('one-more') } }, active, withPendingBuckets([...many, avatars], pending)).status).toBe(400);
    // Applied (the catalog has it no more), the name is free.
    expect(decideBucket({ type: 'CreateBucket', data: { projectId, bucket: spec('avatars') } }, active, withPendingBuckets([photos], pending))).toHaveLength(1);
    // A creation recorded after a deletion (a history from before this rule) is the bucket.
    const recreated = withPendingBuckets([avatars], [...pending, { version: 8, event: { type: 'BucketCreated', data: { projectId, bucket: { ...spec('avatars'), public: true } } } }]);
    expect(recreated).toEqual([{ name: 'avatars', public: true, hasObjects: false }]);
  });

  it('refuses every command on a project that is not active', () => {
    expect(refusal({ type: 'CreateBucket', data: { projectId, bucket: spec('docs') } }, initialState()).status).toBe(404);
    expect(refusal({ type: 'CreateBucket', data: { projectId, bucket: spec('docs') } }, { ...active, status: 'deleting' })).toEqual({ status: 503, code: 'project_unavailable' });
  });
});

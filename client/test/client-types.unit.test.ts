/**
 * The client carries its own copies of the records it answers (it is
 * published and may depend on nothing private); this file fails the
 * typecheck the day a copy and the server's shape drift apart.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { Bucket as ServerBucket, DevInboxMessage, EndUser, ObjectListing, StorageObject } from '@baseplane/contracts';
import type { ColumnInfo } from '../../control-plane/src/tenants/catalog';
import type { Bucket, Column, InboxMessage, ObjectList, StoredObject, User } from '../src/types';

describe("the client's records are the server's", () => {
  it('end users, buckets, objects and listings', () => {
    expectTypeOf<User>().toEqualTypeOf<EndUser>();
    expectTypeOf<Bucket>().toEqualTypeOf<ServerBucket>();
    expectTypeOf<StoredObject>().toEqualTypeOf<StorageObject>();
    expectTypeOf<ObjectList>().toEqualTypeOf<ObjectListing>();
  });

  it('columns and dev-inbox messages', () => {
    expectTypeOf<Column>().toEqualTypeOf<ColumnInfo>();
    expectTypeOf<InboxMessage>().toEqualTypeOf<DevInboxMessage>();
  });
});

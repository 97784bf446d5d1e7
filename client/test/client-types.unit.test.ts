/**
 * The client carries its own copies of the records it answers (it is
 * published and may depend on nothing private); this file fails the
 * typecheck the day a copy and the server's shape drift apart, or a
 * management call's type leaves out an answer the server can give.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { Bucket as ServerBucket, DevInboxMessage, EndUser, ObjectListing, StorageObject } from '@baseplane/contracts';
import type { ColumnInfo } from '../../control-plane/src/tenants/catalog';
import type { Dropped, ManagementClient } from '../src/index';
import type { Bucket, Column, ForeignKey, InboxMessage, ObjectList, OperationAnswer, Project, StoredObject, Table, User } from '../src/types';

/** What a management call's `data` can be when it succeeds. */
type Answered<Call extends (...args: never[]) => Promise<{ data: unknown }>> = NonNullable<Awaited<ReturnType<Call>>['data']>;

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

describe('a management change a workflow applies', () => {
  // API.md → Waiting: still applying after 30 s, it answers 202 { operation } instead of the resource.
  it('is typed as the resource or the operation to follow', () => {
    expectTypeOf<Answered<ManagementClient['projects']['create']>>().toEqualTypeOf<Project | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['projects']['delete']>>().toEqualTypeOf<Project | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['tables']['create']>>().toEqualTypeOf<Table | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['tables']['drop']>>().toEqualTypeOf<Dropped | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['columns']['add']>>().toEqualTypeOf<Column | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['columns']['update']>>().toEqualTypeOf<Column | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['columns']['remove']>>().toEqualTypeOf<Dropped | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['foreignKeys']['add']>>().toEqualTypeOf<ForeignKey | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['foreignKeys']['remove']>>().toEqualTypeOf<Dropped | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['storage']['buckets']['create']>>().toEqualTypeOf<Bucket | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['storage']['buckets']['update']>>().toEqualTypeOf<Bucket | OperationAnswer>();
    expectTypeOf<Answered<ManagementClient['storage']['buckets']['remove']>>().toEqualTypeOf<{ name: string; deleted: true } | OperationAnswer>();
  });
});

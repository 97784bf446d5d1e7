/**
 * The client carries its own copies of the records it answers (it is
 * published and may depend on nothing private); this file fails the
 * typecheck the day a copy and the server's shape drift apart, or a
 * management call's type leaves out an answer the server can give.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { Bucket as ServerBucket, DevInboxMessage, EndUser, ObjectListing, RestSettings as ServerRestSettings, StorageObject } from '@baseplane/contracts';
import type { ColumnInfo } from '../../control-plane/src/tenants/catalog';
import { createClient, type BaseplaneClient, type Dropped, type ManagementClient } from '../src/index';
import type { Bucket, Column, ForeignKey, InboxMessage, ObjectList, OperationAnswer, Project, RestSettings, StoredObject, Table, User } from '../src/types';

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

  it('the data API settings', () => {
    expectTypeOf<RestSettings>().toEqualTypeOf<ServerRestSettings>();
    expectTypeOf<Answered<ManagementClient['restSettings']['get']>>().toEqualTypeOf<RestSettings>();
    expectTypeOf<Answered<ManagementClient['restSettings']['update']>>().toEqualTypeOf<RestSettings>();
  });
});

/** A generated `Database` type with a table of the same name in two schemas. */
interface TwoSchemas {
  public: { Tables: { things: Relation<{ id: number; name: string }> }; Views: {}; Functions: {} };
  api: {
    Tables: { things: Relation<{ id: number; label: string }> };
    Views: {};
    Functions: { hello: { Args: { name: string }; Returns: string } };
  };
}
interface Relation<Row> {
  Row: Row;
  Insert: Partial<Row>;
  Update: Partial<Row>;
  Relationships: [];
}

describe('schema()', () => {
  it('types from() and rpc() by the schema named, as postgrest-js does', () => {
    const typed = (client: BaseplaneClient<TwoSchemas>) => ({
      publicRows: client.from('things').select('id, name'),
      apiRows: client.schema('api').from('things').select('id, label'),
      hello: client.schema('api').rpc('hello', { name: 'x' }),
      // @ts-expect-error -- a schema the Database type does not have
      nope: () => client.schema('nope'),
    });
    type Built = ReturnType<typeof typed>;
    expectTypeOf<Awaited<Built['publicRows']>['data']>().toEqualTypeOf<Array<{ id: number; name: string }> | null>();
    expectTypeOf<Awaited<Built['apiRows']>['data']>().toEqualTypeOf<Array<{ id: number; label: string }> | null>();
    expectTypeOf<Awaited<Built['hello']>['data']>().toEqualTypeOf<string | null>();
  });

  it('types from() and rpc() of a client made for another schema by that schema, named in the type as with supabase-js', () => {
    const made = () => {
      const api = createClient<TwoSchemas, 'api'>('http://localhost', 'key', { db: { schema: 'api' } });
      // @ts-expect-error -- the option must name the schema the type names
      createClient<TwoSchemas, 'api'>('http://localhost', 'key', { db: { schema: 'public' } });
      return { rows: api.from('things').select('id, label'), hello: api.rpc('hello', { name: 'x' }), back: api.schema('public').from('things').select('name') };
    };
    type Made = ReturnType<typeof made>;
    expectTypeOf<Awaited<Made['rows']>['data']>().toEqualTypeOf<Array<{ id: number; label: string }> | null>();
    expectTypeOf<Awaited<Made['hello']>['data']>().toEqualTypeOf<string | null>();
    expectTypeOf<Awaited<Made['back']>['data']>().toEqualTypeOf<Array<{ name: string }> | null>();
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

/**
 * The rows SQL builder: identifiers only from the catalog and quoted, values
 * only as parameters, the primary-key rule of pkWhere, and injection attempts.
 */
import { describe, expect, it } from 'vitest';
import { ApiError, ident } from '@baseplane/contracts';
import { parseRowsQuery } from '../src/rows/rows-parse';
import { MAX_VALUE_DEPTH, countRowsSql, deleteRowSql, encodeValue, insertRowSql, selectRowsSql, updateRowSql, type TableShape } from '../src/rows/rows-sql';

const todos: TableShape = {
  name: 'todos',
  primaryKey: ['id'],
  columns: [
    { name: 'id', type: 'int8' },
    { name: 'title', type: 'text' },
    { name: 'meta', type: 'jsonb' },
    { name: 'tags', type: 'text[]' },
    { name: 'due', type: 'timestamptz' },
  ],
};
const pairs: TableShape = { name: 'pairs', primaryKey: ['a', 'b'], columns: [{ name: 'a', type: 'int4' }, { name: 'b', type: 'text' }, { name: 'note', type: 'text' }] };
/** Names a user may really have created with SQL: they must come out quoted, never spliced. */
const odd: TableShape = {
  name: 'we"ird; drop table x;--',
  primaryKey: ['k"ey'],
  columns: [{ name: 'k"ey', type: 'text' }, { name: 'select', type: 'text' }, { name: 'Mixed Case', type: 'int4' }],
};
const keyless: TableShape = { name: 'log', primaryKey: [], columns: [{ name: 'line', type: 'text' }] };

function refusal(work: () => unknown): { status: number; code: string; message: string } {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return { status: (error as ApiError).status, code: (error as ApiError).code, message: (error as ApiError).message };
  }
  throw new Error('expected a refusal');
}

describe('identifiers', () => {
  it('always quotes and doubles embedded quotes', () => {
    expect(ident('id')).toBe('"id"');
    expect(ident('a"b')).toBe('"a""b"');
    expect(ident('x"; drop table y;--')).toBe('"x""; drop table y;--"');
  });

  it('quotes catalog names that look like SQL, in the table, filter, order and key positions', () => {
    const select = selectRowsSql(odd, parseRowsQuery({ select: 'eq.1', order: 'Mixed Case.desc' }));
    expect(select.text).toBe('select to_json(t.*) as row from "public"."we""ird; drop table x;--" as t where "select" = $1 order by "Mixed Case" desc limit $2 offset $3');
    expect(deleteRowSql(odd, { 'k"ey': 'v' }).text).toBe('delete from "public"."we""ird; drop table x;--" as t where "k""ey" = $1 returning to_json(t.*) as row');
  });
});

describe('reading rows', () => {
  it('orders by the primary key when no order is given, and pages with parameters', () => {
    expect(selectRowsSql(todos, parseRowsQuery({}))).toEqual({ text: 'select to_json(t.*) as row from "public"."todos" as t order by "id" asc limit $1 offset $2', values: [100, 0] });
    expect(selectRowsSql(pairs, parseRowsQuery({ limit: '2', offset: '4' })).text).toContain('order by "a" asc, "b" asc limit $1 offset $2');
    expect(selectRowsSql(keyless, parseRowsQuery({})).text).toBe('select to_json(t.*) as row from "public"."log" as t limit $1 offset $2');
  });

  it('turns every operator into SQL with its value as a parameter', () => {
    const query = {
      id: ['gt.1', 'lte.9'],
      title: ['neq.x', 'like.*a*', 'not.ilike.B*'],
      due: 'is.null',
      meta: 'not.is.null',
      tags: 'eq.{a,b}',
      a: 'in.(1,2)',
    };
    const statement = selectRowsSql({ ...todos, columns: [...todos.columns, { name: 'a', type: 'int4' }] }, parseRowsQuery({ ...query, order: 'due.desc.nullslast,title' }));
    expect(statement.text).toBe(
      'select to_json(t.*) as row from "public"."todos" as t where "id" > $1 and "id" <= $2 and "title" <> $3 and "title"::text like $4 and not ("title"::text ilike $5)' +
        ' and "due" is null and not ("meta" is null) and "tags" = $6 and "a" = any($7) order by "due" desc nulls last, "title" asc limit $8 offset $9',
    );
    expect(statement.values).toEqual(['1', '9', 'x', '%a%', 'B%', '{a,b}', ['1', '2'], 100, 0]);
  });

  it('counts with the same filters and no paging', () => {
    expect(countRowsSql(todos, parseRowsQuery({ title: 'eq.milk', limit: '1' }).filters)).toEqual({ text: 'select count(*) as total from "public"."todos" as t where "title" = $1', values: ['milk'] });
  });

  it('refuses a column the table does not have, in a filter or an order', () => {
    expect(refusal(() => selectRowsSql(todos, parseRowsQuery({ nope: 'eq.1' })))).toMatchObject({ status: 400, code: 'unknown_column' });
    expect(refusal(() => selectRowsSql(todos, parseRowsQuery({ order: 'nope.desc' })))).toMatchObject({ status: 400, code: 'unknown_column' });
  });

  describe('injection attempts', () => {
    it.each([
      ['a filter column', { 'id;drop table todos': 'eq.1' }],
      ['a quoted filter column', { 'id" = 1 or "1': 'eq.1' }],
      ['an order term', { order: 'id;--' }],
      ['an order with SQL after the column', { order: 'id desc; drop table todos' }],
      ['an order by a subquery', { order: '(select 1)' }],
    ])('refuses %s as an unknown column', (_, query) => {
      expect(refusal(() => selectRowsSql(todos, parseRowsQuery(query)))).toMatchObject({ status: 400, code: 'unknown_column' });
    });

    it('passes hostile values as parameters only', () => {
      const value = "1); drop table todos;--";
      const statement = selectRowsSql(todos, parseRowsQuery({ title: `eq.${value}`, id: `in.(1,"2) or (1=1")` }));
      expect(statement.text).not.toContain('drop');
      expect(statement.text).not.toContain('1=1');
      expect(statement.values).toEqual([value, ['1', '2) or (1=1'], 100, 0]);
    });
  });
});

describe('inserting', () => {
  it('lists the given columns and passes values by column type', () => {
    const statement = insertRowSql(todos, { title: "it's; drop table todos", meta: ['x', { y: 1 }], tags: ['a', 'b"c'], due: null });
    expect(statement.text).toBe('insert into "public"."todos" as t ("title", "meta", "tags", "due") values ($1, $2, $3, $4) returning to_json(t.*) as row');
    expect(statement.values).toEqual(["it's; drop table todos", '["x",{"y":1}]', ['a', 'b"c'], null]);
  });

  it('takes every default when no data is given', () => {
    expect(insertRowSql(todos, {})).toEqual({ text: 'insert into "public"."todos" as t default values returning to_json(t.*) as row', values: [] });
  });

  it('refuses an unknown column, whatever it looks like', () => {
    expect(refusal(() => insertRowSql(todos, { 'title") values (1); drop table todos;--': 'x' }))).toMatchObject({ status: 400, code: 'unknown_column' });
  });
});

describe('encoding values', () => {
  it('sends JSON text to json and jsonb, even for strings, and arrays as arrays elsewhere', () => {
    expect(encodeValue({ name: 'm', type: 'jsonb' }, 'text')).toBe('"text"');
    expect(encodeValue({ name: 'm', type: 'json' }, { a: [1] })).toBe('{"a":[1]}');
    expect(encodeValue({ name: 'm', type: 'jsonb' }, null)).toBeNull();
    expect(encodeValue({ name: 't', type: 'integer[]' }, [1, 2])).toEqual([1, 2]);
    expect(encodeValue({ name: 't', type: 'text' }, { a: 1 })).toBe('{"a":1}');
    expect(encodeValue({ name: 't', type: 'bool' }, true)).toBe(true);
    expect(encodeValue({ name: 't', type: 'numeric(10,2)' }, 1.5)).toBe(1.5);
  });
});

describe('updating and deleting by primary key', () => {
  it('sets the given columns where the whole key matches', () => {
    expect(updateRowSql(pairs, { b: 'x', a: 1 }, { note: 'n', b: 'y' })).toEqual({
      text: 'update "public"."pairs" as t set "note" = $1, "b" = $2 where "a" = $3 and "b" = $4 returning to_json(t.*) as row',
      values: ['n', 'y', 1, 'x'],
    });
    expect(deleteRowSql(todos, { id: 7 })).toEqual({ text: 'delete from "public"."todos" as t where "id" = $1 returning to_json(t.*) as row', values: [7] });
  });

  it('refuses a partial key, another column, a null key and a table without a key', () => {
    expect(refusal(() => deleteRowSql(pairs, { a: 1 }))).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(refusal(() => deleteRowSql(pairs, { a: 1, b: 'x', note: 'n' }))).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(refusal(() => deleteRowSql(todos, { title: 'x' }))).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(refusal(() => deleteRowSql(todos, { id: null }))).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(refusal(() => deleteRowSql(keyless, { line: 'x' }))).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(refusal(() => updateRowSql(todos, { id: 1 }, {}))).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('does not take a key name from the object prototype', () => {
    const constructorKeyed: TableShape = { name: 'c', primaryKey: ['constructor'], columns: [{ name: 'constructor', type: 'text' }] };
    expect(refusal(() => deleteRowSql(constructorKeyed, {}))).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('refuses unknown columns in pkWhere and data as unknown_column', () => {
    expect(refusal(() => deleteRowSql(todos, { id: 1, 'id = id or true --': 1 }))).toMatchObject({ status: 400, code: 'unknown_column' });
    expect(refusal(() => updateRowSql(todos, { id: 1 }, { 'title" = \'x\', "id': 2 }))).toMatchObject({ status: 400, code: 'unknown_column' });
  });
});

describe('deeply nested values', () => {
  const nest = (depth: number, leaf: unknown = 1): unknown => {
    let value = leaf;
    for (let i = 0; i < depth; i++) value = [value];
    return value;
  };

  it('refuses a value nested deeper than the limit under any column, data or key, as invalid_request', () => {
    const tooDeep = nest(MAX_VALUE_DEPTH + 1);
    for (const column of todos.columns) {
      expect(refusal(() => encodeValue(column, tooDeep)), column.type).toMatchObject({ status: 400, code: 'invalid_request', message: `the value of column "${column.name}" nests deeper than ${MAX_VALUE_DEPTH} levels` });
    }
    expect(refusal(() => encodeValue({ name: 'meta', type: 'jsonb' }, { a: nest(100_000) })).code).toBe('invalid_request');
    expect(refusal(() => insertRowSql(todos, { title: nest(100_000) })).code).toBe('invalid_request');
    expect(refusal(() => updateRowSql(todos, { id: 1 }, { meta: nest(100_000) })).code).toBe('invalid_request');
    expect(refusal(() => deleteRowSql(todos, { id: nest(100_000) })).code).toBe('invalid_request');
  });

  it('writes JSON at the limit, and refuses arrays of more dimensions than PostgreSQL has', () => {
    expect(encodeValue({ name: 'meta', type: 'jsonb' }, nest(MAX_VALUE_DEPTH - 1))).toBe(`${'['.repeat(MAX_VALUE_DEPTH - 1)}1${']'.repeat(MAX_VALUE_DEPTH - 1)}`);
    expect(encodeValue({ name: 'tags', type: 'text[]' }, nest(6, 'x'))).toEqual(nest(6, 'x'));
    expect(refusal(() => encodeValue({ name: 'tags', type: 'text[]' }, nest(7, 'x')))).toMatchObject({ status: 400, code: 'invalid_request', message: expect.stringContaining('more than 6 dimensions') });
    expect(refusal(() => encodeValue({ name: 'title', type: 'text' }, nest(7, 'x'))).code).toBe('invalid_request');
  });
});

/** The rows query-string grammar: filters, `in` lists, order and paging, and what it refuses. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '@baseplane/contracts';
import { parseFilter, parseList, parseOrder, parseRowsQuery } from '../src/rows/rows-parse';

function refusal(work: () => unknown): { status: number; code: string } {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return { status: (error as ApiError).status, code: (error as ApiError).code };
  }
  throw new Error('expected a refusal');
}

describe('filters', () => {
  it.each([
    ['eq.5', { operator: 'eq', value: '5' }],
    ['neq.done', { operator: 'neq', value: 'done' }],
    ['gt.1.5', { operator: 'gt', value: '1.5' }],
    ['gte.2024-01-01T00:00:00Z', { operator: 'gte', value: '2024-01-01T00:00:00Z' }],
    ['lt.', { operator: 'lt', value: '' }],
    ['lte.10', { operator: 'lte', value: '10' }],
    ['like.*milk*', { operator: 'like', value: '%milk%' }],
    ['ilike.A%b*', { operator: 'ilike', value: 'A%b%' }],
    ['is.null', { operator: 'is', value: 'null' }],
    ['is.TRUE', { operator: 'is', value: 'true' }],
    ['is.false', { operator: 'is', value: 'false' }],
    ['in.(1,2,3)', { operator: 'in', value: ['1', '2', '3'] }],
  ])('reads %s', (input, expected) => {
    expect(parseFilter('col', input)).toEqual({ column: 'col', negated: false, ...expected });
  });

  it('keeps dots and odd characters of the value as they are', () => {
    expect(parseFilter('email', 'eq.a.b@c.d')).toEqual({ column: 'email', negated: false, operator: 'eq', value: 'a.b@c.d' });
    expect(parseFilter('x', "eq.1); drop table x;--")).toMatchObject({ value: "1); drop table x;--" });
  });

  it('reads the not. prefix', () => {
    expect(parseFilter('done', 'not.is.null')).toEqual({ column: 'done', negated: true, operator: 'is', value: 'null' });
  });

  it.each([
    ['eq'],
    ['equals.5'],
    ['5'],
    ['is.maybe'],
    ['is.null; drop table x'],
    ['in.1,2'],
    ['in.(1,2'],
    ['in.("a)'],
    ['in.("a"b)'],
    ['not.'],
    ['drop table x;--.1'],
  ])('refuses %s with invalid_filter', (input) => {
    expect(refusal(() => parseFilter('col', input))).toEqual({ status: 400, code: 'invalid_filter' });
  });
});

describe('in lists', () => {
  it('splits on commas outside quotes, trims bare items, unescapes quoted ones', () => {
    expect(parseList('()')).toEqual([]);
    expect(parseList('( a , b )')).toEqual(['a', 'b']);
    expect(parseList('("a,b",c)')).toEqual(['a,b', 'c']);
    expect(parseList('("say \\"hi\\"","back\\\\slash", " padded ")')).toEqual(['say "hi"', 'back\\slash', ' padded ']);
    expect(parseList("(1); drop table x;--,2)")).toEqual(['1); drop table x;--', '2']);
    expect(parseList('(,)')).toEqual(['', '']);
  });
});

describe('order', () => {
  it('reads directions and nulls placement, ascending by default', () => {
    expect(parseOrder('a,b.desc,c.asc.nullsfirst,d.nullslast')).toEqual([
      { column: 'a', direction: 'asc' },
      { column: 'b', direction: 'desc' },
      { column: 'c', direction: 'asc', nulls: 'first' },
      { column: 'd', direction: 'asc', nulls: 'last' },
    ]);
  });

  it('reads modifiers from the right, so the rest is the column name (refused later if unknown)', () => {
    expect(parseOrder('my.col.desc')).toEqual([{ column: 'my.col', direction: 'desc' }]);
    expect(parseOrder('id;--')).toEqual([{ column: 'id;--', direction: 'asc' }]);
    expect(parseOrder('id desc; drop table x')).toEqual([{ column: 'id desc; drop table x', direction: 'asc' }]);
  });

  it('refuses a term without a column', () => {
    expect(refusal(() => parseOrder(''))).toEqual({ status: 400, code: 'invalid_filter' });
    expect(refusal(() => parseOrder('a,,b'))).toEqual({ status: 400, code: 'invalid_filter' });
    expect(refusal(() => parseOrder('.desc'))).toEqual({ status: 400, code: 'invalid_filter' });
  });
});

describe('the whole query', () => {
  it('defaults to 100 rows from the start, and caps the limit at 1000', () => {
    expect(parseRowsQuery({})).toEqual({ filters: [], order: [], limit: 100, offset: 0 });
    expect(parseRowsQuery({ limit: '5000', offset: '20' })).toMatchObject({ limit: 1000, offset: 20 });
    expect(parseRowsQuery({ limit: '0' })).toMatchObject({ limit: 0 });
  });

  it('makes a filter of every other key, two for a key given twice, and ignores apikey', () => {
    const parsed = parseRowsQuery({ apikey: 'bp_service_x', order: 'id.desc', age: ['gte.18', 'lt.65'], name: 'ilike.a*' });
    expect(parsed.order).toEqual([{ column: 'id', direction: 'desc' }]);
    expect(parsed.filters).toEqual([
      { column: 'age', negated: false, operator: 'gte', value: '18' },
      { column: 'age', negated: false, operator: 'lt', value: '65' },
      { column: 'name', negated: false, operator: 'ilike', value: 'a%' },
    ]);
  });

  it('keeps a hostile column name as a name, for the catalog to refuse', () => {
    expect(parseRowsQuery({ 'id;drop table x': 'eq.1' }).filters).toEqual([{ column: 'id;drop table x', negated: false, operator: 'eq', value: '1' }]);
  });

  it.each([[{ limit: '-1' }], [{ limit: 'ten' }], [{ offset: '1.5' }], [{ offset: '1;drop' }], [{ limit: ['1', '2'] }], [{ order: ['a', 'b'] }]])(
    'refuses bad paging %j with invalid_request',
    (query) => {
      expect(refusal(() => parseRowsQuery(query))).toEqual({ status: 400, code: 'invalid_request' });
    },
  );
});

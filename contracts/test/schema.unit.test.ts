/** Column types, identifiers and defaults as API.md accepts them. */
import { describe, expect, it } from 'vitest';
import { ApiError, checkIdentifier, defaultSql, normalizeType } from '../src';

describe('normalizeType', () => {
  it.each([
    ['text', 'text'], ['integer', 'int4'], ['INT4', 'int4'], ['bigint', 'int8'], ['boolean', 'bool'], ['varchar(20)', 'varchar(20)'],
    ['numeric(10, 2)', 'numeric(10,2)'], ['numeric', 'numeric'], ['double precision', 'float8'], ['timestamptz', 'timestamptz'],
    ['text[]', 'text[]'], ['int8 []', 'int8[]'], ['uuid', 'uuid'], ['jsonb', 'jsonb'], ['bytea', 'bytea'],
  ])('accepts %s as %s', (input, expected) => {
    expect(normalizeType(input)).toBe(expected);
  });

  it.each(['money', 'text; drop table x', 'int4(3)', 'varchar(20', 'serial', '', 'int4[][]x'])('refuses %j with a 400', (input) => {
    expect(() => normalizeType(input)).toThrow(ApiError);
  });

  it.each([['varchar(1)', 'varchar(1)'], ['varchar(10485760)', 'varchar(10485760)'], ['numeric(1000)', 'numeric(1000)'], ['numeric(5,0)', 'numeric(5,0)'], ['numeric(5,5)', 'numeric(5,5)'], ['varchar(5)[]', 'varchar(5)[]']])(
    'accepts the size limits PostgreSQL accepts: %s',
    (input, expected) => {
      expect(normalizeType(input)).toBe(expected);
    },
  );

  it.each(['varchar(0)', 'varchar(10485761)', 'varchar(999999999)', 'numeric(0)', 'numeric(1001)', 'numeric(0,0)', 'numeric(5,6)', 'numeric(1001,2)', 'varchar(0)[]'])(
    'refuses %j, a size PostgreSQL refuses, with a 400 naming the limits',
    (input) => {
      expect(() => normalizeType(input)).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request', message: expect.stringMatching(/must be from \d+ to \d+/) }));
    },
  );
});

describe('checkIdentifier', () => {
  it('accepts plain names and refuses anything that would need quoting', () => {
    expect(checkIdentifier('todo_items2', 'table')).toBe('todo_items2');
    for (const bad of ['2things', 'a b', 'x"y', 'pg_stuff', 'a;b', 'x'.repeat(64), '']) expect(() => checkIdentifier(bad, 'table')).toThrow(ApiError);
  });
});

describe('defaultSql', () => {
  it('keeps the known functions and quotes everything else as a literal', () => {
    expect(defaultSql('now()')).toBe('now()');
    expect(defaultSql('AUTH.UID()')).toBe('auth.uid()');
    expect(defaultSql('0')).toBe("'0'");
    expect(defaultSql("it's'); drop table x; --")).toBe("'it''s''); drop table x; --'");
  });
});

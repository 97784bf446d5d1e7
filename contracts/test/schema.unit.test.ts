/** Column types, identifiers and defaults as API.md accepts them. */
import { describe, expect, it } from 'vitest';
import { ApiError, checkIdentifier, checkSqlExpression, defaultSql, normalizeType } from '../src';

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

describe('checkSqlExpression', () => {
  it.each([
    'n',
    'n::int4',
    "nullif(trim(n), '')::int4",
    "coalesce(n, 'a, b; -- /* c */')",
    "'it''s, fine'",
    "E'\\\\'', still one string, '", // \\ is one backslash, '' one quote: all one string
    "E'tab\\there, and \\\\ a backslash'",
    "'a\\b'",
    '$$a, b; -- c$$',
    '$tag$ $$ , ; $tag$',
    '$a$x$ab$, still inside$a$',
    'a$b$ || $b$, inside$b$',
    '"weird, ""name"";"',
    'U&"d\\0061t, a"',
    "U&'d!0061t, x' uescape '!'",
    "B'1010'",
    "X'1f'",
    "N'x, y'",
    "e'\\''",
    'array[1, 2][1]',
    'case when n > 0 then (n - 1) * 2 else -n end',
    'n / 2',
    '1e5 + 0x1f + 1_000 + .5 + 1.5e-3',
    'row(n, 1)',
    'date\n  \'2020-01-01\'',
  ])('accepts %j as one expression', (text) => {
    expect(checkSqlExpression(text, 'using')).toBe(text);
  });

  it.each([
    // A second ALTER TABLE action or statement.
    ['n, disable row level security', 'a , outside'],
    ['n; drop table t', 'a ;'],
    ["coalesce(n, 'x');", 'a ;'],
    // `$` inside an identifier starts no dollar quote: PostgreSQL reads `a$b$` as one name and the `,` as outside.
    ['a$b$, disable row level security, x $b$', 'a , outside'],
    ['a$$, disable row level security, $$', 'a , outside'],
    // E'' strings: a backslash escapes the quote after it, so `E'\''` closes at its third quote.
    ["E'\\'', disable row level security, ''", 'a , outside'],
    ["E'\\\\\\'', disable row level security, '", 'a , outside'],
    // A plain string with \' reads differently when standard_conforming_strings is off.
    ["'\\', disable row level security, '", 'a backslash before a quote'],
    ["B'1\\', disable row level security, '", 'a backslash before a quote'],
    // Comments.
    ["'x'--", 'a comment'],
    ['n--, disable row level security', 'a comment'],
    ['n /* , */', 'a comment'],
    ['n +-- x', 'a comment'],
    // Brackets that close early, cross or stay open.
    ['(n), disable row level security, (n)', 'a , outside'],
    ['n), disable row level security, alter column n type text using (n', 'closes nothing'],
    ['(n]', 'closes nothing'],
    ['array[(n]), disable row level security, ([1]', 'closes nothing'],
    ['f((n)', 'is not closed'],
    // Unterminated quotes.
    ["'n, disable row level security", 'not closed'],
    ['"n, disable row level security', 'not closed'],
    ['$x$ n, disable row level security', 'not closed'],
    ["E'n\\'", 'not closed'],
    // A $ or a number that PostgreSQL might read otherwise.
    ['$ n', 'no dollar quote'],
    ['$1a', 'parameter runs into'],
    ["1e'x', disable row level security, '", 'number runs into'],
    ['1$a$, disable row level security, $a$', 'number runs into'],
    // Characters outside PostgreSQL's lexical structure.
    ['n \\ 1', 'unexpected character'],
    ['n\u000b, 1', 'unexpected character'],
    ["'a\u0000', disable row level security", 'NUL'],
    ['  ', 'empty'],
  ])('refuses %j (%s)', (text, why) => {
    expect(() => checkSqlExpression(text, 'using')).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request', message: expect.stringContaining(why) }));
  });
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

/**
 * Table, column and foreign-key commands: request schemas (API.md → Tables)
 * and the pure rules every part applies to them — identifiers, accepted
 * types (aliases normalised), defaults.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ApiError } from './errors';
import { literal } from './sql-text';
import type { ColumnSpec, TableAccess } from './events';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A name we create objects under: letters, digits and `_`, not starting with a digit, not `pg_`. */
export function checkIdentifier(name: string, what: string): string {
  if (!IDENTIFIER.test(name) || /^pg_/i.test(name)) {
    throw new ApiError(400, 'invalid_request', `invalid ${what} name "${name}"`, null, 'use letters, digits and _ (at most 63), not starting with a digit or pg_');
  }
  return name;
}

const BASE_TYPES: Record<string, string> = {
  text: 'text', varchar: 'varchar', 'character varying': 'varchar',
  int2: 'int2', smallint: 'int2', int4: 'int4', int: 'int4', integer: 'int4', int8: 'int8', bigint: 'int8',
  numeric: 'numeric', decimal: 'numeric', float4: 'float4', real: 'float4', float8: 'float8', 'double precision': 'float8',
  bool: 'bool', boolean: 'bool', uuid: 'uuid', date: 'date', time: 'time', timestamp: 'timestamp', timestamptz: 'timestamptz',
  'timestamp with time zone': 'timestamptz', 'timestamp without time zone': 'timestamp', json: 'json', jsonb: 'jsonb', bytea: 'bytea',
};

/**
 * Normalises a column type of API.md (`varchar(n)`, `numeric(p,s)`, aliases,
 * `[]` arrays) to the spelling we send to PostgreSQL; anything else is a 400.
 */
export function normalizeType(input: string): string {
  const raw = input.trim().toLowerCase().replace(/\s+/g, ' ');
  const array = raw.endsWith('[]');
  const scalar = array ? raw.slice(0, -2).trim() : raw;
  const match = /^([a-z][a-z0-9 ]*?)\s*(?:\(\s*(\d{1,9})\s*(?:,\s*(\d{1,9})\s*)?\))?$/.exec(scalar);
  const base = match && BASE_TYPES[match[1]!];
  if (!match || !base) throw new ApiError(400, 'invalid_request', `unknown column type "${input}"`, null, `accepted: ${Object.values(BASE_TYPES).filter((v, i, a) => a.indexOf(v) === i).join(', ')}, and arrays of them`);
  const [, , p, s] = match;
  let type = base;
  if (base === 'varchar' && p !== undefined && s === undefined) type = `varchar(${sizeWithin(input, 'length', Number(p), 1, VARCHAR_MAX_LENGTH)})`;
  else if (base === 'numeric' && p !== undefined) {
    const precision = sizeWithin(input, 'precision', Number(p), 1, NUMERIC_MAX_PRECISION);
    type = s === undefined ? `numeric(${precision})` : `numeric(${precision},${sizeWithin(input, 'scale', Number(s), 0, precision)})`;
  } else if (p !== undefined) throw new ApiError(400, 'invalid_request', `type "${input}" takes no size`);
  return array ? `${type}[]` : type;
}

/** PostgreSQL's names (`format_type`) of the types API.md accepts, by API.md's name for them. */
const CATALOG_NAMES: Record<string, string> = {
  'character varying': 'varchar', smallint: 'int2', integer: 'int4', bigint: 'int8', real: 'float4', 'double precision': 'float8',
  boolean: 'bool', 'time without time zone': 'time', 'timestamp without time zone': 'timestamp', 'timestamp with time zone': 'timestamptz',
};

/**
 * A column's type as a column record answers it: PostgreSQL's name
 * (`format_type`) spelt as API.md spells the types it accepts (`bigint` ⇒
 * `int8`, `character varying(20)` ⇒ `varchar(20)`, `timestamp with time
 * zone[]` ⇒ `timestamptz[]`), so what a command sent comes back as sent.
 * A type outside API.md's list (an enum, `char(1)`, `timestamp(3)`) keeps
 * PostgreSQL's name.
 */
export function apiTypeName(catalogName: string): string {
  const match = /^(.*?)(\(\d+(?:,\d+)?\))?((?:\[\])*)$/.exec(catalogName)!;
  const [, base, size = '', array] = match;
  const named = CATALOG_NAMES[base!] ?? base!;
  if (size !== '' && named !== 'varchar' && named !== 'numeric') return catalogName;
  return named + size + array;
}

/** PostgreSQL's limits on type modifiers (varchar's length, numeric's precision), refused here rather than when applied. */
const VARCHAR_MAX_LENGTH = 10485760;
const NUMERIC_MAX_PRECISION = 1000;

function sizeWithin(input: string, what: string, value: number, min: number, max: number): number {
  if (value < min || value > max) throw new ApiError(400, 'invalid_request', `the ${what} of "${input}" must be from ${min} to ${max}`);
  return value;
}

/** Defaults that are expressions; anything else is a literal value. */
export const DEFAULT_FUNCTIONS = ['now()', 'gen_random_uuid()', 'auth.uid()'] as const;

/** The SQL of a default: a known function as it is, a literal quoted (PostgreSQL casts it to the column type). */
export function defaultSql(value: string): string {
  const trimmed = value.trim();
  if ((DEFAULT_FUNCTIONS as readonly string[]).includes(trimmed.toLowerCase())) return trimmed.toLowerCase();
  return literal(value);
}

/** PostgreSQL's date and time inputs that are read when the statement is, not when a row is inserted. */
const MOMENT_INPUTS = new Set(['now', 'today', 'tomorrow', 'yesterday']);

/**
 * Refuses a default that PostgreSQL would turn into a constant when the
 * column is made: `'now'`, `'today'`, `'tomorrow'` or `'yesterday'` for a
 * date or time column is the moment of the apply, not of each insert (and a
 * replay of the history would give another one).
 */
export function checkDefault(value: string | null | undefined, type: string): void {
  if (value === undefined || value === null || !/^(date|time|timestamp)/.test(type)) return;
  const word = value.trim().toLowerCase();
  if (!MOMENT_INPUTS.has(word)) return;
  throw new ApiError(400, 'invalid_request', `a default of "${value}" would be the moment the column is made, not that of each insert`, null, word === 'now' ? 'use now()' : "use now() or an expression set by the app");
}

/**
 * Refuses text that is not one SQL expression, before it is recorded: a
 * column change's `using` is pasted into `alter table … using (<expr>)`, where
 * a `,` would start another ALTER TABLE action and a `;` another statement.
 * Scans PostgreSQL's lexical structure (src/backend/parser/scan.l): strings
 * ('…' with '' doubled; E'…' with backslash escapes; B'…', X'…', N'…', U&'…'),
 * dollar quotes ($tag$…$tag$, where a `$` inside an identifier starts none),
 * quoted identifiers ("…" with "" doubled, U&"…"). Outside them it refuses
 * comments (`--`, `/*`), unbalanced or crossed brackets, `;`, a `,` at the top
 * level, and any character it does not know. Where it cannot be sure what
 * PostgreSQL would read, it refuses: a backslash before a quote in a plain
 * string (read as an escape when `standard_conforming_strings` is off), a
 * number running into a quote or `$`, a `$` that starts neither a parameter
 * nor a dollar quote.
 */
export function checkSqlExpression(text: string, what: string): string {
  const refuse = (why: string) =>
    new ApiError(400, 'invalid_request', `"${what}" must be one SQL expression: ${why}`, null, 'for example name::int4 or nullif(name, \'\')::int4; no comments, no ; and no , outside parentheses');
  if (text.includes('\0')) throw refuse('it contains a NUL character');
  const n = text.length;
  const brackets: string[] = [];
  let tokens = 0;
  let i = 0;

  /** Index after the `'` closing the string opened at `quote`; `escapes` for E'…'. */
  const endOfString = (quote: number, escapes: boolean): number => {
    for (let j = quote + 1; ; ) {
      if (j >= n) throw refuse('a string is not closed');
      const c = text[j];
      if (c === '\\') {
        if (escapes) {
          j += 2;
          continue;
        }
        if (text[j + 1] === "'") throw refuse("a backslash before a quote in a string (write E'…' to escape, or '' to double a quote)");
      } else if (c === "'") {
        if (text[j + 1] !== "'") return j + 1;
        j += 2;
        continue;
      }
      j++;
    }
  };
  /** Index after the `"` closing the identifier opened at `quote`. */
  const endOfIdentifier = (quote: number): number => {
    for (let j = quote + 1; ; ) {
      if (j >= n) throw refuse('a quoted identifier is not closed');
      if (text[j] === '"') {
        if (text[j + 1] !== '"') return j + 1;
        j += 2;
        continue;
      }
      j++;
    }
  };

  while (i < n) {
    const c = text[i]!;
    if (SQL_SPACE.has(c)) {
      i++;
      continue;
    }
    tokens++;
    if (c === "'") i = endOfString(i, false);
    else if (c === '"') i = endOfIdentifier(i);
    else if (c === '$') {
      DOLLAR_QUOTE.lastIndex = i;
      const delimiter = DOLLAR_QUOTE.exec(text)?.[0];
      if (delimiter !== undefined) {
        const end = text.indexOf(delimiter, i + delimiter.length);
        if (end < 0) throw refuse(`a dollar quote ${delimiter} is not closed`);
        i = end + delimiter.length;
      } else if (isDigit(text[i + 1])) {
        i++;
        while (isDigit(text[i])) i++;
        if (i < n && isIdentifierPart(text[i]!)) throw refuse('a parameter runs into other characters');
      } else throw refuse('a $ that starts no dollar quote');
    } else if (isIdentifierStart(c)) {
      let j = i + 1;
      while (j < n && isIdentifierPart(text[j]!)) j++;
      const word = text.slice(i, j);
      // A one-letter word right before a quote is a string prefix (scan.l's xestart, xbstart, xhstart, xnstart, xusstart, xuistart).
      if (/^[eE]$/.test(word) && text[j] === "'") i = endOfString(j, true);
      else if (/^[bBxXnN]$/.test(word) && text[j] === "'") i = endOfString(j, false);
      else if (/^[uU]$/.test(word) && text[j] === '&' && text[j + 1] === "'") i = endOfString(j + 1, false);
      else if (/^[uU]$/.test(word) && text[j] === '&' && text[j + 1] === '"') i = endOfIdentifier(j + 1);
      else i = j;
    } else if (isDigit(c)) {
      // Digits, letters, `_` and `.`: decimal, hex, octal and binary integers, decimals, exponents. Anything
      // else glued to a number is an error since PostgreSQL 15 and a new token before it: refuse what matters.
      while (i < n && /[0-9A-Za-z_.]/.test(text[i]!)) i++;
      if (i < n && (text[i] === "'" || text[i] === '"' || text[i] === '$' || text.charCodeAt(i) >= 0x80)) throw refuse('a number runs into other characters');
    } else if ((c === '-' && text[i + 1] === '-') || (c === '/' && text[i + 1] === '*')) {
      throw refuse('it contains a comment');
    } else if (c === '(' || c === '[') {
      brackets.push(c === '(' ? ')' : ']');
      i++;
    } else if (c === ')' || c === ']') {
      if (brackets.pop() !== c) throw refuse(`a ${c} closes nothing it opened`);
      i++;
    } else if (c === ',') {
      if (brackets.length === 0) throw refuse('a , outside parentheses');
      i++;
    } else if (c === ';') {
      throw refuse('it contains a ;');
    } else if (SQL_OPERATOR_CHARS.has(c)) {
      i++;
    } else throw refuse(`unexpected character ${JSON.stringify(c)}`);
  }
  if (brackets.length > 0) throw refuse(`a ${brackets.at(-1) === ')' ? '(' : '['} is not closed`);
  if (tokens === 0) throw refuse('it is empty');
  return text;
}

/** scan.l's `space`, without \v (whitespace only since PostgreSQL 16; refused as unknown). */
const SQL_SPACE = new Set([' ', '\t', '\n', '\r', '\f']);
/** scan.l's `self` and `op_chars`, less what the scanner treats on its own (brackets, `,`, `;`). */
const SQL_OPERATOR_CHARS = new Set([...'.:+-*/%^<>=~!@#&|`?']);
/** scan.l's `dolqdelim`; every code unit from U+0080 on is part of a multibyte character, which scan.l counts as a letter. */
const DOLLAR_QUOTE = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
/** scan.l's `ident_start`. */
const isIdentifierStart = (c: string) => /[A-Za-z_]/.test(c) || c.charCodeAt(0) >= 0x80;
/** scan.l's `ident_cont`: `$` continues an identifier, so `a$b$` is one and starts no dollar quote. */
const isIdentifierPart = (c: string) => isIdentifierStart(c) || isDigit(c) || c === '$';

export const TABLE_ACCESS: readonly TableAccess[] = ['public-read', 'authenticated', 'owner', 'private', 'custom'];

const TypeName = Type.String({ minLength: 1, maxLength: 64 });
const Identifier = Type.String({ minLength: 1, maxLength: 63 });
const DefaultValue = Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean(), Type.Null()]);

const ADDED_COLUMN_FIELDS = {
  name: Identifier,
  type: TypeName,
  nullable: Type.Optional(Type.Boolean()),
  default: Type.Optional(DefaultValue),
  unique: Type.Optional(Type.Boolean()),
};

/** A column of a table being created: it may be (part of) the primary key. */
export const ColumnBody = Type.Object({ ...ADDED_COLUMN_FIELDS, primaryKey: Type.Optional(Type.Boolean()) }, { additionalProperties: false });
export type ColumnBody = Static<typeof ColumnBody>;

/** A column added to a table (API.md: `{name,type,nullable?,default?,unique?}`): ADD COLUMN makes no primary key, so `primaryKey` is refused, not ignored. */
export const AddColumnBody = Type.Object(ADDED_COLUMN_FIELDS, { additionalProperties: false });
export type AddColumnBody = Static<typeof AddColumnBody>;

export const CreateTableBody = Type.Object(
  {
    name: Identifier,
    columns: Type.Array(ColumnBody, { maxItems: 1600 }),
    access: Type.Optional(Type.Union(TABLE_ACCESS.map((a) => Type.Literal(a)))),
  },
  { additionalProperties: false },
);
export type CreateTableBody = Static<typeof CreateTableBody>;

export const UpdateColumnBody = Type.Object(
  {
    name: Type.Optional(Identifier),
    type: Type.Optional(TypeName),
    using: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
    nullable: Type.Optional(Type.Boolean()),
    default: Type.Optional(DefaultValue),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateColumnBody = Static<typeof UpdateColumnBody>;

const FK_ACTIONS = ['no action', 'restrict', 'cascade', 'set null', 'set default'] as const;
const FkAction = Type.Union(FK_ACTIONS.map((a) => Type.Literal(a)));

export const AddForeignKeyBody = Type.Object(
  {
    name: Type.Optional(Identifier),
    columns: Type.Array(Identifier, { minItems: 1, maxItems: 32 }),
    references: Type.Object({ table: Identifier, columns: Type.Array(Identifier, { minItems: 1, maxItems: 32 }) }, { additionalProperties: false }),
    onDelete: Type.Optional(FkAction),
    onUpdate: Type.Optional(FkAction),
  },
  { additionalProperties: false },
);
export type AddForeignKeyBody = Static<typeof AddForeignKeyBody>;

/** A column body with its type normalised and its default as SQL-ready text. */
export function toColumnSpec(body: ColumnBody): ColumnSpec {
  checkIdentifier(body.name, 'column');
  const spec: ColumnSpec = { name: body.name, type: normalizeType(body.type) };
  if (body.nullable !== undefined) spec.nullable = body.nullable;
  if (body.default !== undefined && body.default !== null) spec.default = String(body.default);
  if (body.unique !== undefined) spec.unique = body.unique;
  if (body.primaryKey !== undefined) spec.primaryKey = body.primaryKey;
  return spec;
}

/**
 * Table, column and foreign-key commands: request schemas (API.md → Tables)
 * and the pure rules every part applies to them — identifiers, accepted
 * types (aliases normalised), defaults.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ApiError } from './errors';
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
  return `'${value.replace(/'/g, "''")}'`;
}

export const TABLE_ACCESS: readonly TableAccess[] = ['public-read', 'authenticated', 'owner', 'private', 'custom'];

const TypeName = Type.String({ minLength: 1, maxLength: 64 });
const Identifier = Type.String({ minLength: 1, maxLength: 63 });
const DefaultValue = Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean(), Type.Null()]);

export const ColumnBody = Type.Object(
  {
    name: Identifier,
    type: TypeName,
    nullable: Type.Optional(Type.Boolean()),
    default: Type.Optional(DefaultValue),
    unique: Type.Optional(Type.Boolean()),
    primaryKey: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ColumnBody = Static<typeof ColumnBody>;

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

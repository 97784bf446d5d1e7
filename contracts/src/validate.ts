/**
 * Request validation against the TypeBox schemas of contracts/. A mismatch is
 * a 400 `invalid_request` listing each offending path.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler, ValueErrorType, type TypeCheck, type ValueError } from '@sinclair/typebox/compiler';
import { ApiError } from './errors';

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** Errors that only say a value is not of a union member's type: the member the value meant speaks instead. */
const NOT_THIS_TYPE = new Set([ValueErrorType.Null, ValueErrorType.String, ValueErrorType.Number, ValueErrorType.Integer, ValueErrorType.Boolean, ValueErrorType.Object, ValueErrorType.Array, ValueErrorType.Literal]);

/**
 * A pattern mismatch says what the pattern means (a schema's `patternMessage`),
 * never the pattern itself; a union says why the member of the value's own
 * type refused it (a URL's pattern, not "Expected union value").
 */
function messageOf(error: ValueError): string {
  if (error.type === ValueErrorType.Union) {
    const choices = choicesOf(error.schema);
    if (choices) return `must be one of ${choices}`;
    const meant = error.errors.flatMap((member) => [...member]).find((inner) => !NOT_THIS_TYPE.has(inner.type));
    return meant ? messageOf(meant) : error.message;
  }
  const said = (error.schema as { patternMessage?: unknown }).patternMessage;
  return error.type === ValueErrorType.StringPattern && typeof said === 'string' ? said : error.message;
}

/**
 * A union of literals (and null), such as a table's `access`, as the list of
 * what it takes: `"public_read", "owner" or null`. Undefined for any other union.
 */
function choicesOf(schema: TSchema): string | undefined {
  const members = (schema as { anyOf?: TSchema[] }).anyOf ?? [];
  if (members.length === 0 || !members.every((member) => 'const' in member || member.type === 'null')) return undefined;
  const names = members.map((member) => ('const' in member ? JSON.stringify(member.const) : 'null'));
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

/**
 * Where a string (or a key) holds U+0000, which PostgreSQL's text and jsonb
 * cannot store: refused here, not by the database as a 500. Walked without
 * recursion, as an `Unknown` field may nest as deep as the body parser allows.
 */
function nulPath(value: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[value, '']];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, path] = next;
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return path || '/';
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) {
        if (key.includes('\u0000')) return `${path}/${key}`;
        pending.push([child, `${path}/${key}`]);
      }
    }
  }
  return undefined;
}

export function validate<T extends TSchema>(schema: T, value: unknown, what = 'body'): Static<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  const input = value ?? (what === 'body' ? undefined : {});
  if (check.Check(input)) {
    const nul = nulPath(input);
    if (nul === undefined) return input as Static<T>;
    throw invalidInput(what, [{ path: nul, message: 'must not contain a NUL character' }]);
  }
  throw invalidInput(what, [...check.Errors(input)].map((e) => ({ path: e.path || '/', message: messageOf(e) })));
}

/**
 * The 400 `invalid_request` of a refused input: the first problem in the
 * message, up to ten in `details`. For checks a schema cannot say, too.
 */
export function invalidInput(what: string, problems: Array<{ path: string; message: string }>): ApiError {
  const errors = problems.slice(0, 10);
  const first = errors[0];
  return new ApiError(400, 'invalid_request', `invalid ${what}${first ? `: ${first.path} ${first.message}` : ''}`, errors);
}

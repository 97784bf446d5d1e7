/**
 * Request validation against the TypeBox schemas of contracts/. A mismatch is
 * a 400 `invalid_request` listing each offending path.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ApiError } from './errors';

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

export function validate<T extends TSchema>(schema: T, value: unknown, what = 'body'): Static<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  const input = value ?? (what === 'body' ? undefined : {});
  if (check.Check(input)) return input as Static<T>;
  const errors = [...check.Errors(input)].slice(0, 10).map((e) => ({ path: e.path || '/', message: e.message }));
  const first = errors[0];
  throw new ApiError(400, 'invalid_request', `invalid ${what}${first ? `: ${first.path} ${first.message}` : ''}`, errors);
}

/**
 * JSON bodies of the rows API with their numbers as written. JSON.parse makes
 * 9007199254740993 into 9007199254740992 and 1.50 into 1.5, so a row sent with
 * an int8 key past 2^53 (as the rows API's own answers write it) was stored
 * under another key, and found no row to update or delete; PostgREST hands
 * PostgreSQL the body's own text. Here a number whose JavaScript value does
 * not print back as written becomes a {@link JsonNumber} holding its text,
 * and {@link encodeValue} (rows-sql.ts) gives PostgreSQL that text where the
 * column's type takes it. Pure, no recursion: a body as deep as JSON.parse
 * takes is taken.
 */
import { randomUUID } from 'node:crypto';

/**
 * JSON text that {@link stringifyExactJson} writes as it is: a number as
 * written, or PostgreSQL's own text of a json value (the SQL console's).
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** A JSON number literal that a JavaScript number would not keep exactly. */
export class JsonNumber extends JsonText {}

/** JSON's number grammar, from the index it is set to. */
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Parses JSON text as JSON.parse does, except that a number whose value
 * prints back otherwise (`9007199254740993`, `1.50`, `1E3`) is a JsonNumber.
 * Invalid text throws JSON.parse's SyntaxError.
 */
export function parseExactJson(text: string): unknown {
  // Each such number is swapped for a string no body can hold (a fresh UUID), which the reviver swaps back.
  const marker = `bp-exact-number-${randomUUID()}-`;
  const kept: string[] = [];
  let swapped = '';
  let copiedUpTo = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c /* \ */) i++;
      continue;
    }
    if (c !== 0x2d /* - */ && (c < 0x30 || c > 0x39)) continue;
    NUMBER.lastIndex = i;
    const token = NUMBER.exec(text)?.[0];
    // Not a number after all: JSON.parse refuses the text below.
    if (token === undefined) continue;
    if (String(Number(token)) !== token) {
      swapped += `${text.slice(copiedUpTo, i)}"${marker}${kept.length}"`;
      kept.push(token);
      copiedUpTo = i + token.length;
    }
    i += token.length - 1;
  }
  if (kept.length === 0) return JSON.parse(text);
  swapped += text.slice(copiedUpTo);
  const restore = (value: unknown) =>
    typeof value === 'string' && value.startsWith(marker) ? new JsonNumber(kept[Number(value.slice(marker.length))]!) : value;
  // Swapped back by a walk of our own: JSON.parse's reviver recurses, and a deep body would overflow the stack.
  const root = restore(JSON.parse(swapped));
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null || node instanceof JsonNumber) continue;
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      record[key] = restore(record[key]);
      pending.push(record[key]);
    }
  }
  return root;
}

/**
 * JSON.stringify, writing each JsonText (a JsonNumber too) as its own text. Written as a loop:
 * JSON.stringify recurses, and a value a few thousand levels deep (which
 * parseExactJson takes and PostgreSQL's jsonb reads) overflows its stack.
 * `undefined`, functions and symbols go as JSON.stringify writes them (left
 * out of objects, null in arrays); a value with `toJSON` (a Date) writes what
 * that answers.
 */
export function stringifyExactJson(value: unknown): string {
  const out: string[] = [];
  // What is still to write, last first: a value, or text (punctuation, a key).
  const pending: Array<{ value: unknown } | string> = [{ value }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next === 'string') {
      out.push(next);
      continue;
    }
    const item = jsonValueOf(next.value);
    if (item instanceof JsonText) out.push(item.text);
    else if (Array.isArray(item)) {
      out.push('[');
      pending.push(']');
      for (let i = item.length - 1; i >= 0; i--) {
        const element = jsonValueOf(item[i]);
        pending.push(isUnwritten(element) ? 'null' : { value: element });
        if (i > 0) pending.push(',');
      }
    } else if (typeof item === 'object' && item !== null) {
      const entries = Object.entries(item).map(([key, child]) => [key, jsonValueOf(child)] as const).filter(([, child]) => !isUnwritten(child));
      out.push('{');
      pending.push('}');
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        pending.push({ value: child }, `${JSON.stringify(key)}:`);
        if (i > 0) pending.push(',');
      }
    } else out.push(isUnwritten(item) ? 'null' : JSON.stringify(item));
  }
  return out.join('');
}

/** What JSON.stringify writes for `value`: its `toJSON()` when it has one. */
function jsonValueOf(value: unknown): unknown {
  const toJSON = (value as { toJSON?: unknown } | null | undefined)?.toJSON;
  return typeof toJSON === 'function' && !(value instanceof JsonText) ? (toJSON as () => unknown).call(value) : value;
}

/** Values JSON has no text for: JSON.stringify leaves them out of objects and writes null in arrays. */
const isUnwritten = (value: unknown) => value === undefined || typeof value === 'function' || typeof value === 'symbol';

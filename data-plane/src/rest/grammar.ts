/**
 * PostgREST's query grammar, pure: `select=` trees, `<op>.<value>` filters,
 * `or=(…)`/`and=(…)` logic trees and `order=` terms. Names come out as the
 * client wrote them; the planner checks them against the schema cache.
 */
import { invalidFilter } from './rest-errors';

/** One item of `select=`. */
export type SelectItem =
  | { kind: 'star' }
  | { kind: 'field'; name: string; json?: JsonStep[]; alias?: string; cast?: string }
  | { kind: 'embed'; relation: string; alias?: string; hint?: string; inner: boolean; children: SelectItem[]; spread?: boolean };

/** One step of a JSON path: `->key` (JSON) or `->>key` (text). */
export interface JsonStep {
  op: '->' | '->>';
  key: string;
}

/** Whether a JSON path's key is an array index (`->0`, `->-1`), as PostgREST reads a well-formed integer. */
export function isJsonIndex(key: string): boolean {
  return /^-?\d{1,9}$/.test(key);
}

/**
 * The key PostgREST names a field with a JSON path after: its last key that
 * is not an index, else the column (`data->0` is `data`, `data->c->0` is `c`).
 */
export function jsonFieldName(name: string, json: JsonStep[]): string {
  return json.findLast((step) => !isJsonIndex(step.key))?.key ?? name;
}

/**
 * Splits a field, `col->a->>b`, into the column name and its JSON steps. The
 * name and each key may be double-quoted, as PostgREST's pFieldName reads
 * them (`"a.b"->"c d"`), for names holding `.`, `,`, spaces or `->`.
 */
export function splitJsonPath(text: string): { name: string; json: JsonStep[] } {
  const arrow = (from: number) => indexOutsideQuotes(text, (i) => text.startsWith('->', i), from);
  const pieces: string[] = [];
  const ops: Array<JsonStep['op']> = [];
  let start = 0;
  for (let at = arrow(0); at >= 0; at = arrow(start)) {
    pieces.push(text.slice(start, at));
    const op = text.startsWith('->>', at) ? '->>' : '->';
    ops.push(op);
    start = at + op.length;
  }
  pieces.push(text.slice(start));
  const json = ops.map((op, i): JsonStep => {
    const key = fieldName(pieces[i + 1]!);
    if (key === '') throw invalidFilter(`"${text}": empty key in a JSON path`);
    return { op, key };
  });
  return { name: fieldName(pieces[0]!), json };
}

/** A name (a column, a JSON key, an embedding's alias in a filter key): the text inside double quotes when it is wholly quoted, else the text as written. */
export function fieldName(text: string): string {
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') && indexOutsideQuotes(text, () => true) === -1 ? unquote(text) : text;
}

/**
 * The key of an embedding's modifiers: its parent's path, a dot, its alias,
 * the alias double-quoted when it holds a dot or a quote, so that `"a.b"`
 * and `a` → `b` stay two paths.
 */
export function embedPath(parent: string, alias: string): string {
  const segment = /[."]/.test(alias) ? `"${alias.replace(/["\\]/g, '\\$&')}"` : alias;
  return parent === '' ? segment : `${parent}.${segment}`;
}

/** Splits at each `separator` outside double quotes: `"a.b".c` at `.` ⇒ `"a.b"`, `c`. */
export function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let at = indexOutsideQuotes(text, (i) => text[i] === separator); at >= 0; at = indexOutsideQuotes(text, (i) => text[i] === separator, start)) {
    parts.push(text.slice(start, at));
    start = at + 1;
  }
  parts.push(text.slice(start));
  return parts;
}

export const OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch', 'is', 'isdistinct', 'in', 'cs', 'cd', 'ov', 'sl', 'sr', 'nxl', 'nxr', 'adj', 'fts', 'plfts', 'phfts', 'wfts'] as const;
export type Operator = (typeof OPERATORS)[number];

/** `column=[not.]op[(language)].value` */
export interface FilterCondition {
  kind: 'filter';
  column: string;
  /** The JSON path after the column, `col->a->>b`. */
  json?: JsonStep[];
  negate: boolean;
  op: Operator;
  /** A list for `in`, the text otherwise. */
  value: string | string[];
  /** Text-search configuration of `fts(english)`. */
  language?: string;
  /** `like(any).{a*,b*}`: compare with any or all of a list (the value is then the list). */
  quantifier?: 'any' | 'all';
}

/** Operators that take `(any)`/`(all)` and a `{a,b}` list, as in PostgREST. */
const QUANTIFIABLE = new Set(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch']);

/** `or=(…)`, `and=(…)`, possibly negated and nested. */
export interface LogicCondition {
  kind: 'logic';
  op: 'and' | 'or';
  negate: boolean;
  children: Condition[];
}

export type Condition = FilterCondition | LogicCondition;

export interface OrderTerm {
  /**
   * `embedding(column)`: the parent rows ordered by a column of a to-one
   * embedding of the same level, named by its alias as `select=` gives it
   * (PostgREST 11's related order).
   */
  relation?: string;
  column: string;
  json?: JsonStep[];
  direction: 'asc' | 'desc';
  nulls?: 'first' | 'last';
}

const IS_VALUES = new Set(['null', 'not_null', 'true', 'false', 'unknown']);

/**
 * How deep `select=` embeddings and `or=`/`and=` trees may nest. The parsers
 * recurse once per level: without a bound a few kilobytes of parentheses
 * overflow the stack (a 500); past it, PostgreSQL's own stack is next.
 */
export const MAX_NESTING = 32;

function checkDepth(depth: number, what: string): void {
  if (depth > MAX_NESTING) throw invalidFilter(`${what} nests deeper than ${MAX_NESTING} levels`);
}

/** Splits at top-level commas, honouring parentheses, braces and double quotes. */
export function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      current += ch;
      if (ch === '\\' && i + 1 < text.length) current += text[++i];
      else if (ch === '"') quoted = false;
      continue;
    }
    if (ch === '"') quoted = true;
    else if (ch === '(' || ch === '{' || ch === '[') depth++;
    else if (ch === ')' || ch === '}' || ch === ']') depth--;
    if (depth < 0) throw invalidFilter(`unbalanced parentheses in "${text}"`);
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
      continue;
    }
    current += ch;
  }
  if (quoted || depth !== 0) throw invalidFilter(`unbalanced quotes or parentheses in "${text}"`);
  parts.push(current);
  return parts;
}

/** A field as the grammar's items carry it: the name, and its JSON path only when it has one. */
function withJson(field: { name: string; json: JsonStep[] }): { name: string; json?: JsonStep[] } {
  return field.json.length > 0 ? field : { name: field.name };
}

/** `"a\"b"` ⇒ `a"b`; unquoted text as it is. */
function unquote(text: string): string {
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) return text.slice(1, -1).replace(/\\(.)/g, '$1');
  return text;
}

// ---------------------------------------------------------------- select

/** Parses `select=`; empty or absent means `*`. */
export function parseSelect(text: string | undefined): SelectItem[] {
  if (text === undefined || text.trim() === '') return [{ kind: 'star' }];
  return splitTopLevel(text).map((item) => parseSelectItem(item.trim(), 0));
}

const NAME = /^[^\s:!()",.]+$/;

/** The first index at or after `from` where `matches` holds outside double quotes (`\"` escapes inside them), or -1. */
function indexOutsideQuotes(text: string, matches: (at: number) => boolean, from = 0): number {
  let quoted = false;
  for (let i = from; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '\\') i++;
      else if (ch === '"') quoted = false;
    } else if (ch === '"') quoted = true;
    else if (matches(i)) return i;
  }
  return -1;
}

/** A name as PostgREST's pFieldName reads it: a double-quoted identifier (any text), or a bare one. */
function nameOf(text: string): string | undefined {
  if (text.length > 2 && text.startsWith('"') && text.endsWith('"') && indexOutsideQuotes(text, () => true) === -1) return unquote(text);
  return NAME.test(text) ? text : undefined;
}

/** `relation!hint!inner`, each part bare or quoted. */
function parseEmbedHead(head: string, item: string): { relation: string; hint?: string; inner: boolean } {
  const parts: string[] = [];
  let start = 0;
  for (let bang = indexOutsideQuotes(head, (i) => head[i] === '!'); bang >= 0; bang = indexOutsideQuotes(head, (i) => head[i] === '!', start)) {
    parts.push(head.slice(start, bang));
    start = bang + 1;
  }
  parts.push(head.slice(start));
  const [relationText = '', ...modifiers] = parts;
  const relation = nameOf(relationText);
  if (relation === undefined) throw invalidFilter(`"${item}" is not a valid embedded resource`);
  let hint: string | undefined;
  let inner = false;
  for (const modifier of modifiers) {
    if (modifier === 'inner') inner = true;
    else if (modifier === 'left') inner = false;
    else if (hint === undefined && nameOf(modifier) !== undefined) hint = nameOf(modifier);
    else throw invalidFilter(`"${item}": unknown embedding modifier "${modifier}"`);
  }
  return { relation, hint, inner };
}

function parseSelectItem(item: string, depth: number): SelectItem {
  if (item === '') throw invalidFilter('empty item in select');
  if (item === '*') return { kind: 'star' };
  if (item.startsWith('...')) {
    // `...rel(cols)`: the embedded row's columns are spread into the parent's.
    const embedded = parseSelectItem(item.slice(3), depth);
    if (embedded.kind !== 'embed' || embedded.alias !== undefined) throw invalidFilter(`"${item}": only an embedded resource without alias can be spread`);
    return { ...embedded, spread: true };
  }
  let alias: string | undefined;
  let rest = item;
  // `alias:name`, but not the `::` of a cast, nor a colon inside quotes.
  const colon = indexOutsideQuotes(item, (i) => item[i] === ':' && item[i - 1] !== ':' && item[i + 1] !== ':');
  if (colon > 0 && indexOutsideQuotes(item.slice(0, colon), (i) => item[i] === '(') < 0) {
    alias = unquote(item.slice(0, colon).trim());
    rest = item.slice(colon + 1).trim();
  }
  const cast = indexOutsideQuotes(rest, (i) => rest.startsWith('::', i));
  const open = indexOutsideQuotes(rest, (i) => rest[i] === '(');
  // An opening parenthesis before any cast opens an embedding; after one it belongs to the type (`::numeric(10,2)`).
  if (open >= 0 && (cast < 0 || open < cast)) {
    if (!rest.endsWith(')')) throw invalidFilter(`"${item}" is not a valid embedded resource`);
    checkDepth(depth + 1, 'select');
    const { relation, hint, inner } = parseEmbedHead(rest.slice(0, open), item);
    const inside = rest.slice(open + 1, -1);
    return { kind: 'embed', relation, alias, hint, inner, children: inside.trim() === '' ? [] : splitTopLevel(inside).map((child) => parseSelectItem(child.trim(), depth + 1)) };
  }
  const name = cast < 0 ? rest : rest.slice(0, cast);
  const type = cast < 0 ? undefined : rest.slice(cast + 2);
  if (!name.trim() || type?.includes('::') || type?.trim() === '') throw invalidFilter(`"${item}" is not a valid select item`);
  if (name.trim() === '*' && alias === undefined && type === undefined) return { kind: 'star' };
  const field = withJson(splitJsonPath(name.trim()));
  return { kind: 'field', ...field, alias, cast: type?.trim() };
}

// ---------------------------------------------------------------- filters

/**
 * Parses the value of a filter parameter, `[not.]op[(language)].value`, for
 * `column`. Top-level values are taken as written (no unquoting), as PostgREST does.
 */
export function parseFilter(field: string, text: string, insideLogic = false): FilterCondition {
  const { name: column, json } = withJson(splitJsonPath(field));
  const at = json ? { column, json } : { column };
  let rest = text;
  let negate = false;
  if (rest.startsWith('not.')) {
    negate = true;
    rest = rest.slice(4);
  }
  const dot = rest.indexOf('.');
  if (dot < 0) throw invalidFilter(`"${field}=${text}": expected <operator>.<value>`, null);
  let opText = rest.slice(0, dot);
  const value = rest.slice(dot + 1);
  let language: string | undefined;
  let quantifier: 'any' | 'all' | undefined;
  const paren = /^(\w+)\(([^)]*)\)$/.exec(opText);
  if (paren) {
    opText = paren[1]!;
    if (['fts', 'plfts', 'phfts', 'wfts'].includes(opText)) language = paren[2]!;
    else if ((paren[2] === 'any' || paren[2] === 'all') && QUANTIFIABLE.has(opText)) quantifier = paren[2];
    else throw invalidFilter(`"${field}=${text}": unknown operator modifier "${paren[2]}"`);
  }
  if (!(OPERATORS as readonly string[]).includes(opText)) throw invalidFilter(`"${field}=${text}": unknown operator "${opText}"`);
  const op = opText as Operator;
  if (op === 'in') {
    if (!value.startsWith('(') || !value.endsWith(')')) throw invalidFilter(`"${field}=${text}": in needs a list, in.(a,b)`);
    const inner = value.slice(1, -1);
    return { kind: 'filter', ...at, negate, op, value: inner === '' ? [] : splitTopLevel(inner).map((v) => unquote(v.trim())) };
  }
  if (quantifier) {
    // Inside a logic tree the list may come double-quoted, as any value there (PostgREST's pLogicSingleVal).
    const list = insideLogic ? unquote(value) : value;
    if (!list.startsWith('{') || !list.endsWith('}')) throw invalidFilter(`"${field}=${text}": ${op}(${quantifier}) needs a list, {a,b}`);
    const inner = list.slice(1, -1);
    return { kind: 'filter', ...at, negate, op, quantifier, value: inner === '' ? [] : splitTopLevel(inner).map((v) => unquote(v.trim())) };
  }
  if (op === 'is' && !IS_VALUES.has(value.toLowerCase())) throw invalidFilter(`"${field}=${text}": is takes null, not_null, true, false or unknown`);
  const condition: FilterCondition = { kind: 'filter', ...at, negate, op, value: insideLogic ? unquote(value) : value };
  if (language !== undefined) condition.language = language;
  return condition;
}

/** Parses `(a.eq.1,b.gt.2,and(c.is.null,not.d.eq.4))` as the children of an `or`/`and`. */
export function parseLogic(op: 'and' | 'or', negate: boolean, text: string, depth = 1): LogicCondition {
  checkDepth(depth, `${op}=`);
  if (!text.startsWith('(') || !text.endsWith(')')) throw invalidFilter(`${op}=${text}: expected a parenthesised list`);
  const inner = text.slice(1, -1);
  if (inner.trim() === '') throw invalidFilter(`${op}=${text}: empty list`);
  const children = splitTopLevel(inner).map((part): Condition => {
    const item = part.trim();
    const nested = /^(not\.)?(and|or)(\(.*\))$/s.exec(item);
    if (nested) return parseLogic(nested[2] as 'and' | 'or', nested[1] !== undefined, nested[3]!, depth + 1);
    const dot = indexOutsideQuotes(item, (i) => item[i] === '.');
    if (dot <= 0) throw invalidFilter(`"${item}" in ${op}=: expected <column>.<operator>.<value>`);
    return parseFilter(item.slice(0, dot), item.slice(dot + 1), true);
  });
  return { kind: 'logic', op, negate, children };
}

// ---------------------------------------------------------------- order

/** Parses `order=a.desc.nullslast,b,embedding(c).desc`. */
export function parseOrder(text: string): OrderTerm[] {
  return splitTopLevel(text).map((part) => {
    const { relation, column, modifiers } = orderField(part.trim(), text);
    if (!column) throw invalidFilter(`order=${text}: empty column`);
    const { name, json } = withJson(splitJsonPath(column));
    const term: OrderTerm = { column: name, direction: 'asc' };
    if (relation !== undefined) term.relation = relation;
    if (json) term.json = json;
    for (const piece of modifiers) {
      if (piece === 'asc' || piece === 'desc') term.direction = piece;
      else if (piece === 'nullsfirst') term.nulls = 'first';
      else if (piece === 'nullslast') term.nulls = 'last';
      else throw invalidFilter(`order=${text}: unknown modifier "${piece}"`);
    }
    return term;
  });
}

/**
 * One term of `order=` split into its field and its modifiers: `col.desc`, or
 * `embedding(col).desc`, whose parentheses are read before the dots so that a
 * JSON path inside them (`embedding(doc->"a.b")`) keeps its own.
 */
function orderField(part: string, text: string): { relation?: string; column: string; modifiers: string[] } {
  const open = indexOutsideQuotes(part, (i) => part[i] === '(');
  if (open < 0) {
    const [column = '', ...modifiers] = splitOutsideQuotes(part, '.');
    return { column, modifiers };
  }
  const close = indexOutsideQuotes(part, (i) => part[i] === ')', open);
  const relation = nameOf(part.slice(0, open));
  const rest = close < 0 ? '' : part.slice(close + 1);
  if (relation === undefined || close < 0 || (rest !== '' && !rest.startsWith('.'))) throw invalidFilter(`order=${text}: "${part}" is not a column nor embedding(column)`);
  const column = part.slice(open + 1, close).trim();
  // PostgREST's related order takes one column of the embedding.
  if (indexOutsideQuotes(column, (i) => column[i] === ',' || column[i] === '(') >= 0) throw invalidFilter(`order=${text}: "${part}" names more than one column; order by one column of an embedding per term`);
  return { relation, column, modifiers: rest === '' ? [] : splitOutsideQuotes(rest.slice(1), '.') };
}

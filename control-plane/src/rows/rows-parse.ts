/**
 * Parses the query string of `GET …/rows` (PostgREST's grammar, the
 * specification's operators) into filters, order and paging. Pure: names
 * stay untrusted strings here; rows-sql.ts resolves them against the catalog.
 */
import { ApiError, invalidRequest, type ListRowsQuery } from '@baseplane/contracts';

export type ComparisonOperator = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'like' | 'ilike';
export type IsValue = 'null' | 'true' | 'false' | 'unknown';

/** One `<col>=[not.]<op>.<value>`; `negated` for PostgREST's `not.` prefix. */
export type Filter =
  | { column: string; negated: boolean; operator: ComparisonOperator; value: string }
  | { column: string; negated: boolean; operator: 'is'; value: IsValue }
  | { column: string; negated: boolean; operator: 'in'; value: string[] };

export interface OrderTerm {
  column: string;
  direction: 'asc' | 'desc';
  nulls?: 'first' | 'last';
}

export interface RowsSelection {
  filters: Filter[];
  order: OrderTerm[];
  limit: number;
  offset: number;
}

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

const COMPARISONS: readonly string[] = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike'];
const IS_VALUES: readonly string[] = ['null', 'true', 'false', 'unknown'];
/** Query keys that are not filters (`apikey` is how a service key may travel). */
const RESERVED = new Set(['limit', 'offset', 'order', 'apikey']);

const invalidFilter = (message: string, hint: string | null = null) => new ApiError(400, 'invalid_filter', message, null, hint);

/** The whole query string of a rows read. */
export function parseRowsQuery(query: ListRowsQuery): RowsSelection {
  const filters: Filter[] = [];
  for (const [key, raw] of Object.entries(query)) {
    if (RESERVED.has(key)) continue;
    for (const value of Array.isArray(raw) ? raw : [raw]) filters.push(parseFilter(key, value));
  }
  return {
    filters,
    order: query.order === undefined ? [] : parseOrder(single(query.order, 'order')),
    limit: Math.min(parseCount(query.limit, 'limit') ?? DEFAULT_LIMIT, MAX_LIMIT),
    offset: parseCount(query.offset, 'offset') ?? 0,
  };
}

/** `[not.]<op>.<value>` for one column. */
export function parseFilter(column: string, input: string): Filter {
  if (column === '') throw invalidFilter('a filter needs a column name');
  let rest = input;
  let negated = false;
  if (rest.startsWith('not.')) {
    negated = true;
    rest = rest.slice(4);
  }
  const dot = rest.indexOf('.');
  if (dot < 0) throw invalidFilter(`filter on "${column}" must be <operator>.<value>`, 'e.g. ?age=gte.18 or ?id=in.(1,2,3)');
  const operator = rest.slice(0, dot);
  const value = rest.slice(dot + 1);
  if (COMPARISONS.includes(operator)) {
    const pattern = operator === 'like' || operator === 'ilike' ? value.replace(/\*/g, '%') : value;
    return { column, negated, operator: operator as ComparisonOperator, value: pattern };
  }
  if (operator === 'is') {
    const lowered = value.toLowerCase();
    if (!IS_VALUES.includes(lowered)) throw invalidFilter(`"is" takes null, true, false or unknown, not "${value}"`);
    return { column, negated, operator: 'is', value: lowered as IsValue };
  }
  if (operator === 'in') return { column, negated, operator: 'in', value: parseList(value) };
  throw invalidFilter(`unknown filter operator "${operator}"`, 'operators: eq neq gt gte lt lte like ilike is in, optionally after not.');
}

/**
 * `(a,b,"c,d")`: items split on commas outside double quotes; inside quotes
 * `\"` and `\\` escape, as PostgREST reads them.
 */
export function parseList(input: string): string[] {
  if (!input.startsWith('(') || !input.endsWith(')')) throw invalidFilter('"in" takes a parenthesised list, e.g. in.(1,2,3)');
  const body = input.slice(1, -1);
  if (body === '') return [];
  const items: string[] = [];
  let current = '';
  let quoted = false;
  let wasQuoted = false;
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (quoted) {
      if (char === '\\' && i + 1 < body.length) current += body[++i];
      else if (char === '"') quoted = false;
      else current += char;
    } else if (char === '"') {
      if (current.trim() !== '') throw invalidFilter('a quote may only open an "in" item');
      current = '';
      quoted = true;
      wasQuoted = true;
    } else if (char === ',') {
      items.push(wasQuoted ? current : current.trim());
      current = '';
      wasQuoted = false;
    } else if (wasQuoted) {
      if (char.trim() !== '') throw invalidFilter('text after a closing quote in an "in" list');
    } else {
      current += char;
    }
  }
  if (quoted) throw invalidFilter('unterminated quote in an "in" list');
  items.push(wasQuoted ? current : current.trim());
  return items;
}

/**
 * `col.asc,col2.desc.nullslast`: modifiers are read from the right, so a
 * column whose name holds a dot still orders.
 */
export function parseOrder(input: string): OrderTerm[] {
  return input.split(',').map((part) => {
    const segments = part.trim().split('.');
    let direction: 'asc' | 'desc' | undefined;
    let nulls: 'first' | 'last' | undefined;
    while (segments.length > 1) {
      const last = segments[segments.length - 1]!;
      if ((last === 'asc' || last === 'desc') && !direction) direction = last;
      else if ((last === 'nullsfirst' || last === 'nullslast') && !nulls && !direction) nulls = last === 'nullsfirst' ? 'first' : 'last';
      else break;
      segments.pop();
    }
    const column = segments.join('.');
    if (column === '') throw invalidFilter(`order term "${part}" names no column`, 'e.g. order=created_at.desc,id.asc');
    return nulls ? { column, direction: direction ?? 'asc', nulls } : { column, direction: direction ?? 'asc' };
  });
}

function single(value: string | string[], name: string): string {
  if (Array.isArray(value)) throw invalidRequest(`"${name}" may be given once`);
  return value;
}

function parseCount(value: string | string[] | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const text = single(value, name);
  if (!/^\d{1,15}$/.test(text)) throw invalidRequest(`"${name}" must be a non-negative integer`);
  return Number(text);
}

/**
 * Stage 5 of a data request (PostgREST's `Response`): the statement's row
 * and the plan become status, headers and body. The body is the text
 * PostgreSQL built; nothing is re-encoded here. Pure.
 */
import { ApiError } from '@baseplane/contracts';
import type { DeletePlan, InsertPlan, Plan, UpdatePlan } from './plan';
import { outputNames, type PlannedSelect } from './plan-select';
import { maxAffectedExceeded, notSingleObject, putKeyMismatch } from './rest-errors';
import type { StatementRow } from './sql';
import { withResponseSettings } from './tx-settings';

export interface Answer {
  status: number;
  /** By lower-case name; a name SQL set more than once (`response.headers`) has its values in turn. */
  headers: Record<string, string | string[]>;
  body: string | null;
}

const CONTENT_TYPE = {
  json: 'application/json; charset=utf-8',
  object: 'application/vnd.pgrst.object+json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
} as const;

/** Under `nulls=stripped`, the `vnd.pgrst` type asked for with its parameter, as PostgREST answers. */
const STRIPPED_CONTENT_TYPE = {
  json: 'application/vnd.pgrst.array+json; nulls=stripped; charset=utf-8',
  object: 'application/vnd.pgrst.object+json; nulls=stripped; charset=utf-8',
} as const;

/** A CSV header line of the output names, quoted as the rows are. */
function csvHeader(select: PlannedSelect[]): string {
  return outputNames(select).map((name) => `"${name.replace(/"/g, '""')}"`).join(',');
}

function contentRange(offset: number, rows: number, total: number | null): string {
  const size = total === null ? '*' : String(total);
  return rows === 0 ? `*/${size}` : `${offset}-${offset + rows - 1}/${size}`;
}

/**
 * Content-Range and status of a page of rows (a read, or an rpc returning a
 * set), as PostgREST's rangeStatusHeader: 206 when a count shows rows beyond
 * the page, and an exact count showing it starts past the last row is not
 * satisfiable (416).
 */
function pageAnswer(plan: Plan, offset: number, row: StatementRow, total: number | null, headers: Record<string, string>): number {
  if (plan.count === 'exact' && total !== null && offset > total) {
    throw new ApiError(416, 'range_not_satisfiable', `an offset of ${offset} was requested, but there are only ${total} rows`, { total });
  }
  headers['content-range'] = contentRange(offset, row.page_count, total);
  const partial = total !== null && (offset > 0 || row.page_count < total) && plan.media !== 'object';
  return partial ? 206 : 200;
}

/** `/table?a=eq.1&b=eq.x` for the first row a write returned (Prefer: return=headers-only). */
function locationOf(table: string, keyJson: string | null | undefined): string | undefined {
  if (!keyJson) return undefined;
  const key = JSON.parse(keyJson) as Record<string, unknown>;
  const query = Object.entries(key).map(([k, v]) => `${encodeURIComponent(k)}=eq.${encodeURIComponent(String(v))}`).join('&');
  return `/${encodeURIComponent(table)}?${query}`;
}

/**
 * Whether the request must touch exactly one row (`Accept:
 * application/vnd.pgrst.object+json`). A write must whatever `Prefer: return`
 * says, as in PostgREST (Query.failNotSingular counts the rows written, not
 * the rows answered).
 */
export function wantsSingleObject(plan: Plan): boolean {
  if (plan.media !== 'object') return false;
  if (plan.kind === 'rpc') return plan.fn.returnsSet;
  return true;
}

/** 406 unless one row. */
export function checkSingleObject(plan: Plan, row: StatementRow): void {
  if (wantsSingleObject(plan) && row.page_count !== 1) throw notSingleObject(row.page_count);
}

/**
 * Whether a request's row must be checked before COMMIT: a write under the
 * single-object media type, a PUT (its key must match), and a request bound
 * by `max-affected`.
 */
export function checkedBeforeCommit(plan: Plan): boolean {
  if (plan.maxAffected !== undefined) return true;
  if (plan.kind === 'read' || plan.kind === 'rpc') return false;
  return wantsSingleObject(plan) || (plan.kind === 'insert' && plan.put === true);
}

/**
 * The checks a request passes before COMMIT, so that one refused changes
 * nothing, as PostgREST condemns its transaction: at most `max-affected`
 * rows (PostgREST's PGRST124, 400), one row for the single-object media type
 * (406), and for a PUT one row put, which the statement writes only when the
 * body's primary key equals the filters' (PostgREST's failPut, 400).
 */
export function checkBeforeCommit(plan: Plan, row: StatementRow): void {
  if (plan.maxAffected !== undefined && row.page_count > plan.maxAffected) throw maxAffectedExceeded(row.page_count);
  if (plan.kind === 'insert' && plan.put && row.page_count !== 1) throw putKeyMismatch(plan.relation.primaryKey);
  if (plan.kind !== 'read' && plan.kind !== 'rpc') checkSingleObject(plan, row);
}

/**
 * `Preference-Applied`: what the request's `Prefer` asked and was done, in
 * PostgREST's order (resolution, return, count, handling, timezone,
 * max-affected).
 */
function preferenceApplied(plan: Plan): string | undefined {
  const applied: string[] = [];
  if (plan.kind === 'insert' && plan.onConflict) applied.push(`resolution=${plan.onConflict.action === 'merge' ? 'merge-duplicates' : 'ignore-duplicates'}`);
  if (plan.kind === 'insert' || plan.kind === 'update' || plan.kind === 'delete') applied.push(`return=${plan.return}`);
  if (plan.count) applied.push(`count=${plan.count}`);
  if (plan.handling) applied.push(`handling=${plan.handling}`);
  if (plan.timezone !== undefined) applied.push(`timezone=${plan.timezone}`);
  if (plan.maxAffected !== undefined) applied.push(`max-affected=${plan.maxAffected}`);
  return applied.length > 0 ? applied.join(', ') : undefined;
}

/** Builds the HTTP answer of a plan from its statement's row, with the status and headers SQL set in `response.*` (tx-settings.ts). */
export function respond(plan: Plan, row: StatementRow): Answer {
  return withResponseSettings(answerOf(plan, row), row);
}

function answerOf(plan: Plan, row: StatementRow): Answer {
  const headers: Record<string, string> = {};
  const total = row.total === null || row.total === undefined ? null : Number(row.total);
  const applied = preferenceApplied(plan);
  if (applied) headers['preference-applied'] = applied;
  const media = plan.media;
  let body = row.body;
  if (media === 'csv' && body !== null) {
    const select = plan.kind === 'rpc' ? plan.select ?? [] : plan.select;
    body = body === '' ? csvHeader(select) : `${csvHeader(select)}\n${body}`;
  }
  checkSingleObject(plan, row);
  headers['content-type'] = plan.stripNulls ? STRIPPED_CONTENT_TYPE[media === 'object' ? 'object' : 'json'] : CONTENT_TYPE[media];

  switch (plan.kind) {
    case 'read': {
      const status = pageAnswer(plan, plan.modifiers.offset ?? 0, row, total, headers);
      return { status, headers, body: plan.headOnly ? null : body };
    }
    case 'rpc': {
      if (plan.fn.returnsVoid) return { status: 204, headers: applied ? { 'preference-applied': applied } : {}, body: null };
      // The statement counts only a set-returning function's rows (count=exact); any other answers `*`.
      const status = pageAnswer(plan, plan.modifiers.offset ?? 0, row, plan.fn.returnsSet ? total : null, headers);
      return { status, headers, body: plan.headOnly ? null : body ?? 'null' };
    }
    case 'insert':
    case 'update':
    case 'delete': {
      // As PostgREST: a PATCH's range spans the rows it changed, a POST's and a DELETE's is `*`, a PUT has none; the count when asked.
      const counted = plan.count ? row.page_count : null;
      if (plan.kind === 'update') headers['content-range'] = contentRange(0, row.page_count, counted);
      else if (!(plan.kind === 'insert' && plan.put)) headers['content-range'] = `*/${counted ?? '*'}`;
      const status = writeStatus(plan, row);
      if (plan.return === 'representation') return { status, headers, body: plan.headOnly ? null : body ?? '[]' };
      delete headers['content-type'];
      if (plan.return === 'headers-only' && plan.kind === 'insert') {
        const location = locationOf(plan.relation.name, row.location);
        if (location) headers.location = location;
      }
      return { status, headers, body: null };
    }
  }
}

/**
 * A write's status, as PostgREST's: a POST 201, but 200 when a
 * merge-duplicates upsert inserted no row (only updated), whatever it
 * returns; a PUT with its row 201 when it inserted it, 200 when it replaced
 * it, 204 without the row; PATCH and DELETE 200 with the rows, else 204. The
 * statement counts inserted rows in an ordinary table only (sql.ts's
 * countsInserted): an upsert into a partitioned table or a view answers as
 * if it inserted (POST) or replaced (PUT).
 */
function writeStatus(plan: InsertPlan | UpdatePlan | DeletePlan, row: StatementRow): number {
  const inserted = row.inserted === null || row.inserted === undefined ? undefined : Number(row.inserted);
  if (plan.kind === 'insert' && !plan.put) return plan.onConflict?.action === 'merge' && inserted === 0 ? 200 : 201;
  if (plan.return !== 'representation') return 204;
  return plan.kind === 'insert' && inserted !== undefined && inserted > 0 ? 201 : 200;
}

/**
 * Where the columns of views come from, read out of each view's query tree
 * (`pg_rewrite.ev_action`, PostgreSQL's node-tree text), so the schema cache
 * can infer views' relationships from their tables' keys as PostgREST does.
 * Pure: the catalog query hands over the text, this reads it.
 */
import type { ViewColumnSource } from './schema-model';

/** A column of the view (its attribute number) taken as it is from a column of a relation (`resorigtbl`, `resorigcol`). */
export interface ColumnOrigin {
  column: number;
  relation: number;
  relationColumn: number;
}

/**
 * The tokens of a node tree: brackets, and words (a field name `:resno`, a
 * value). PostgreSQL's outToken escapes with a backslash every bracket,
 * blank and backslash inside a word, names and strings included, so a
 * bracket not escaped is always structure.
 */
function* tokens(text: string): Generator<string> {
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === ' ' || ch === '\n' || ch === '\t' || ch === '\r') {
      i++;
    } else if (ch === '(' || ch === ')' || ch === '{' || ch === '}') {
      i++;
      yield ch;
    } else {
      const start = i;
      while (i < text.length) {
        const c = text[i]!;
        if (c === '\\') i += 2;
        else if (c === ' ' || c === '\n' || c === '\t' || c === '\r' || c === '(' || c === ')' || c === '{' || c === '}') break;
        else i++;
      }
      yield text.slice(start, i);
    }
  }
}

/**
 * The columns of a view that show a column of a relation unchanged: the
 * entries of the `targetList` of the view's query (the first `{QUERY` of
 * its rule's list, not those of subqueries nested in it) whose `resorigtbl`
 * PostgreSQL's parser set. Junk entries (sort keys) are not columns.
 */
export function viewColumnOrigins(definition: string): ColumnOrigin[] {
  const origins: ColumnOrigin[] = [];
  let depth = 0;
  /** Depth of the target list's parentheses once its field name was read; 0 before. */
  let listDepth = 0;
  let expectList = false;
  let entry: Record<string, string> = {};
  let field: string | undefined;
  for (const token of tokens(definition)) {
    if (token === '(' || token === '{') {
      depth++;
      if (expectList) {
        if (token !== '(') return origins;
        listDepth = depth;
        expectList = false;
      }
      field = undefined;
      continue;
    }
    if (token === ')' || token === '}') {
      if (listDepth > 0 && depth === listDepth + 1) {
        // The end of one TARGETENTRY.
        const column = Number(entry.resno);
        const relation = Number(entry.resorigtbl);
        const relationColumn = Number(entry.resorigcol);
        if (entry.resjunk !== 'true' && column > 0 && relation > 0 && relationColumn > 0) origins.push({ column, relation, relationColumn });
        entry = {};
      }
      depth--;
      if (listDepth > 0 && depth < listDepth) return origins;
      field = undefined;
      continue;
    }
    if (expectList) return origins; // `:targetList <>`: no columns
    if (field !== undefined) {
      if (listDepth > 0 && depth === listDepth + 1) entry[field] = token;
      field = undefined;
    } else if (token.startsWith(':')) {
      field = token.slice(1);
      // The view's own query is at depth 2: inside the rule's list `(` and its `{QUERY`.
      if (listDepth === 0 && depth === 2 && field === 'targetList') {
        expectList = true;
        field = undefined;
      }
    }
  }
  return origins;
}

/** A relation as the catalog lists it for following views: its oid, kind, and columns by attribute number. */
export interface CatalogRelation {
  oid: number;
  name: string;
  kind: 'table' | 'view';
  columns: Map<number, string>;
}

/** How many views deep a column is followed (a view over a view over …); PostgreSQL has no limit, a cycle is impossible. */
const MAX_VIEW_DEPTH = 64;

/**
 * Resolves the views' column origins to columns of tables, following views
 * over views, by name: what the schema model infers keys from. Origins
 * outside the relations given (another schema) end the trail.
 */
export function viewColumnSources(views: Array<{ oid: number; definition: string }>, relations: CatalogRelation[]): ViewColumnSource[] {
  const byOid = new Map(relations.map((r) => [r.oid, r]));
  const originsOf = new Map<number, Map<number, ColumnOrigin>>();
  for (const view of views) originsOf.set(view.oid, new Map(viewColumnOrigins(view.definition).map((o) => [o.column, o])));
  const sources: ViewColumnSource[] = [];
  for (const [oid, origins] of originsOf) {
    const view = byOid.get(oid);
    if (!view) continue;
    for (const origin of origins.values()) {
      let at: ColumnOrigin | undefined = origin;
      for (let depth = 0; at && depth < MAX_VIEW_DEPTH; depth++) {
        const relation = byOid.get(at.relation);
        if (!relation) break;
        if (relation.kind === 'table') {
          const column = view.columns.get(origin.column);
          const tableColumn = relation.columns.get(at.relationColumn);
          if (column !== undefined && tableColumn !== undefined) sources.push({ view: view.name, column, table: relation.name, tableColumn });
          break;
        }
        at = originsOf.get(relation.oid)?.get(at.relationColumn);
      }
    }
  }
  return sources;
}

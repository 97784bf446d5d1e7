/**
 * The type names a `select=col::type` cast may name, read by a strict
 * grammar: PostgREST splices the cast unquoted (`::int`, `::double precision`),
 * so a cast is never pasted raw here but rebuilt from validated parts. SQL's
 * keyword types (`int`, `character varying(20)`, `timestamp(3) with time
 * zone`) come out as those keywords; any other name comes out quoted, folded
 * to lower case as PostgreSQL folds an unquoted name. Pure.
 */
import { invalidFilter } from './rest-errors';

/** A validated cast target, ready to be written by the SQL builder. */
export interface CastType {
  /** Lower-case words of the type: one identifier, or the keywords of a SQL type. */
  name: string;
  /** SQL's own spelling (keywords, written as they are); otherwise an identifier, written quoted. */
  keyword: boolean;
  /** Type modifiers, `(10,2)`: only where PostgreSQL's grammar takes them for this type. */
  modifiers: number[];
  /** `with time zone` or `without time zone` after `time(p)`/`timestamp(p)`. */
  zone?: 'with time zone' | 'without time zone';
  /** Array dimensions, `[]` or `[3]` each. */
  arrayBounds: string[];
}

/** SQL's keyword type names and how many modifiers each takes (PostgreSQL's gram.y, SimpleTypename). */
const KEYWORD_TYPES = new Map<string, number>([
  ['int', 0], ['integer', 0], ['smallint', 0], ['bigint', 0], ['real', 0], ['boolean', 0], ['double precision', 0],
  ['float', 1], ['decimal', 2], ['dec', 2], ['numeric', 2],
  ['bit', 1], ['bit varying', 1],
  ['character', 1], ['character varying', 1], ['char', 1], ['char varying', 1], ['varchar', 1],
  ['nchar', 1], ['nchar varying', 1], ['national character', 1], ['national character varying', 1], ['national char', 1], ['national char varying', 1],
  ['time', 1], ['timestamp', 1], ['interval', 1],
  ['time with time zone', 0], ['time without time zone', 0], ['timestamp with time zone', 0], ['timestamp without time zone', 0],
]);

/** Types that are plain identifiers in the grammar but take a modifier (their catalog entry has a typmod input function). */
const MODIFIABLE_NAMES = new Set(['bpchar', 'varbit', 'timetz', 'timestamptz']);

const WORD = '[a-z_][a-z0-9_]{0,62}';
const SHAPE = new RegExp(`^(${WORD}(?: ${WORD})*)(?:\\((\\d{1,4})(?:,(\\d{1,4}))?\\))?( with time zone| without time zone)?((?:\\[\\d{0,9}\\]){0,6})$`);

/** Reads the type of a cast; anything outside the grammar is a 400 `invalid_filter`. */
export function parseCastType(text: string): CastType {
  const normal = text
    .trim()
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/ ?([(),[\]]) ?/g, '$1')
    .replace(/\)(?=[a-z])/, ') ');
  const match = SHAPE.exec(normal);
  const refuse = () => invalidFilter(`"${text}" is not a type name`, null);
  if (!match) throw refuse();
  const [, name = '', first, second, zone, arrays = ''] = match;
  const modifiers = [first, second].filter((m): m is string => m !== undefined).map(Number);
  const arrayBounds = arrays.match(/\[\d*\]/g) ?? [];
  // `time(3) with time zone`: the zone follows the modifier, and only time and timestamp take one.
  if (zone !== undefined && name !== 'time' && name !== 'timestamp') throw refuse();
  const allowed = KEYWORD_TYPES.get(name);
  if (allowed !== undefined) {
    if (modifiers.length > allowed) throw refuse();
    return { name, keyword: true, modifiers, ...(zone ? { zone: zone.trim() as CastType['zone'] } : {}), arrayBounds };
  }
  if (name.includes(' ')) throw refuse();
  if (modifiers.length > (MODIFIABLE_NAMES.has(name) ? 1 : 0)) throw refuse();
  return { name, keyword: false, modifiers, arrayBounds };
}

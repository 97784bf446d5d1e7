/**
 * The schema cache: one load shared by concurrent requests, dropped on
 * demand, a failed load not kept, and a miss reloading at most once per
 * interval; and the catalog's rows read into a snapshot, views' columns
 * followed to their tables' keys and functions of a row read as computed
 * fields and relationships.
 */
import { describe, expect, it } from 'vitest';
import { SchemaCache, snapshotFromCatalog } from '../src/rest/schema-cache';
import { MAX_KEY_SHOWINGS, snapshotOf, type SchemaSnapshot } from '../src/rest/schema-model';
import { viewColumnOrigins, viewColumnSources } from '../src/rest/view-columns';

function countingCache(fail = false) {
  let loads = 0;
  const cache = new SchemaCache(async () => {
    loads++;
    if (fail && loads === 1) throw new Error('database down');
    return snapshotOf({ relations: [] });
  });
  return { cache, loads: () => loads };
}

describe('SchemaCache', () => {
  it('loads once for concurrent requests and again after invalidate', async () => {
    const { cache, loads } = countingCache();
    const [a, b] = await Promise.all([cache.get('p'), cache.get('p')]);
    expect(a).toBe(b);
    expect(loads()).toBe(1);
    cache.invalidate('p');
    expect(await cache.get('p')).not.toBe(a);
    expect(loads()).toBe(2);
  });

  it('does not keep a failed load', async () => {
    const { cache, loads } = countingCache(true);
    await expect(cache.get('p')).rejects.toThrow('database down');
    await new Promise((resolve) => setImmediate(resolve));
    await cache.get('p');
    expect(loads()).toBe(2);
  });

  it('reloads after a miss once per interval, however many requests miss', async () => {
    const { cache, loads } = countingCache();
    const used: SchemaSnapshot = await cache.get('p');
    const fresh = await Promise.all(Array.from({ length: 20 }, () => cache.reloadAfterMiss('p', used)));
    expect(new Set(fresh).size).toBeLessThanOrEqual(2);
    expect(fresh[0]).not.toBe(used);
    expect(loads()).toBeLessThanOrEqual(3);
  });
});

describe('snapshotFromCatalog', () => {
  it('reads relations, keys and functions, leaving out functions with unnamed arguments; a function returning a relation’s rows names it', () => {
    const snapshot = snapshotFromCatalog(JSON.stringify({
      relations: [{ name: 'posts', kind: 'table', comment: null, columns: [{ name: 'id', type: 'bigint', nullable: false, hasDefault: true }], primaryKey: ['id'] }],
      foreignKeys: [],
      functions: [
        { name: 'f', returnsSet: true, returnsVoid: false, volatile: false, returnType: 'record', argNames: ['a', 'x', 'y'], argModes: ['i', 't', 't'], argTypes: ['integer', 'text', 'bigint'], inputCount: 1, defaultCount: 0, rowColumns: null },
        { name: 'g', returnsSet: false, returnsVoid: false, volatile: true, returnType: 'integer', argNames: [], argModes: [], argTypes: ['integer'], inputCount: 1, defaultCount: 0, rowColumns: null },
        { name: 'h', returnsSet: false, returnsVoid: false, volatile: false, returnType: 'integer', argNames: ['a', 'b'], argModes: [], argTypes: ['integer', 'integer'], inputCount: 2, defaultCount: 1, rowColumns: null },
        { name: 'latest', returnsSet: true, returnsVoid: false, volatile: false, returnType: 'posts', argNames: [], argModes: [], argTypes: [], inputCount: 0, defaultCount: 0, rowColumns: [{ name: 'id', type: 'bigint', nullable: true, hasDefault: false }], returnsRowOf: 'posts' },
      ],
    }));
    expect(snapshot.relations.get('posts')?.columnsByName.get('id')?.type).toBe('bigint');
    expect(snapshot.functions.get('f')?.[0]).toMatchObject({ args: [{ name: 'a', type: 'integer', hasDefault: false }], returnsRow: true, resultColumns: [{ name: 'x', type: 'text' }, { name: 'y', type: 'bigint' }] });
    expect(snapshot.functions.has('g')).toBe(false);
    expect(snapshot.functions.get('f')?.[0]?.returnsRowOf).toBeUndefined();
    expect(snapshot.functions.get('latest')?.[0]).toMatchObject({ returnsRow: true, returnsRowOf: 'posts', resultColumns: [{ name: 'id' }] });
    expect(snapshot.functions.get('h')?.[0]?.args).toEqual([{ name: 'a', type: 'integer', hasDefault: false }, { name: 'b', type: 'integer', hasDefault: true }]);
  });
});

/**
 * PostgreSQL 18's `pg_rewrite.ev_action` of
 * `create view shelf as select s.author_id as "writer (id)", s.title, 1 as one from (select author_id, title, id from books) s order by s.id`
 * (books = 16392: id 1, title 2, author_id 3), broken into lines at node boundaries: the subquery's target list
 * comes first, the view's own has a constant and a junk sort key, and a name with escaped blanks and parentheses.
 */
const SHELF = String.raw`({QUERY :commandType 1 :querySource 0 :canSetTag true :utilityStmt <> :resultRelation 0 :hasAggs false :hasWindowFuncs false :hasTargetSRFs false :hasSubLinks false :hasDistinctOn false :hasRecursive false :hasModifyingCTE false :hasForUpdate false :hasRowSecurity false :hasGroupRTE false :isReturn false :cteList <>
:rtable ({RANGETBLENTRY :alias {ALIAS :aliasname s :colnames <>} :eref {ALIAS :aliasname s :colnames ("author_id" "title" "id")} :rtekind 1
:subquery {QUERY :commandType 1 :querySource 0 :canSetTag true :utilityStmt <> :resultRelation 0 :hasAggs false :hasWindowFuncs false :hasTargetSRFs false :hasSubLinks false :hasDistinctOn false :hasRecursive false :hasModifyingCTE false :hasForUpdate false :hasRowSecurity false :hasGroupRTE false :isReturn false :cteList <> :rtable ({RANGETBLENTRY :alias <> :eref {ALIAS :aliasname books :colnames ("id" "title" "author_id" "published")} :rtekind 0 :relid 16392 :inh true :relkind r :rellockmode 1 :perminfoindex 1 :tablesample <> :lateral false :inFromCl true :securityQuals <>})
:rteperminfos ({RTEPERMISSIONINFO :relid 16392 :inh true :requiredPerms 2 :checkAsUser 0 :selectedCols (b 8 9 10) :insertedCols (b) :updatedCols (b)}) :jointree {FROMEXPR :fromlist ({RANGETBLREF :rtindex 1}) :quals <>} :mergeActionList <> :mergeTargetRelation 0 :mergeJoinCondition <> :targetList ({TARGETENTRY :expr {VAR :varno 1 :varattno 3 :vartype 20 :vartypmod -1 :varcollid 0 :varnullingrels (b) :varlevelsup 0 :varreturningtype 0 :varnosyn 1 :varattnosyn 3 :location -1} :resno 1 :resname author_id :ressortgroupref 0 :resorigtbl 16392 :resorigcol 3 :resjunk false}
{TARGETENTRY :expr {VAR :varno 1 :varattno 2 :vartype 25 :vartypmod -1 :varcollid 100 :varnullingrels (b) :varlevelsup 0 :varreturningtype 0 :varnosyn 1 :varattnosyn 2 :location -1} :resno 2 :resname title :ressortgroupref 0 :resorigtbl 16392 :resorigcol 2 :resjunk false}
{TARGETENTRY :expr {VAR :varno 1 :varattno 1 :vartype 20 :vartypmod -1 :varcollid 0 :varnullingrels (b) :varlevelsup 0 :varreturningtype 0 :varnosyn 1 :varattnosyn 1 :location -1} :resno 3 :resname id :ressortgroupref 0 :resorigtbl 16392 :resorigcol 1 :resjunk false}) :override 0 :onConflict <> :returningOldAlias <> :returningNewAlias <> :returningList <> :groupClause <> :groupDistinct false :groupingSets <> :havingQual <> :windowClause <> :distinctClause <> :sortClause <> :limitOffset <> :limitCount <> :limitOption 0 :rowMarks <> :setOperations <> :constraintDeps <> :withCheckOptions <> :stmt_location -1 :stmt_len -1} :security_barrier false :relid 0 :inh false :relkind <> :rellockmode 0 :perminfoindex 0 :lateral false :inFromCl true :securityQuals <>})
:rteperminfos <> :jointree {FROMEXPR :fromlist ({RANGETBLREF :rtindex 1}) :quals <>} :mergeActionList <> :mergeTargetRelation 0 :mergeJoinCondition <> :targetList ({TARGETENTRY :expr {VAR :varno 1 :varattno 1 :vartype 20 :vartypmod -1 :varcollid 0 :varnullingrels (b) :varlevelsup 0 :varreturningtype 0 :varnosyn 1 :varattnosyn 1 :location -1} :resno 1 :resname writer\ \(id\) :ressortgroupref 0 :resorigtbl 16392 :resorigcol 3 :resjunk false}
{TARGETENTRY :expr {VAR :varno 1 :varattno 2 :vartype 25 :vartypmod -1 :varcollid 100 :varnullingrels (b) :varlevelsup 0 :varreturningtype 0 :varnosyn 1 :varattnosyn 2 :location -1} :resno 2 :resname title :ressortgroupref 0 :resorigtbl 16392 :resorigcol 2 :resjunk false}
{TARGETENTRY :expr {CONST :consttype 23 :consttypmod -1 :constcollid 0 :constlen 4 :constbyval true :constisnull false :location -1 :constvalue 4 [ 1 0 0 0 0 0 0 0 ]} :resno 3 :resname one :ressortgroupref 0 :resorigtbl 0 :resorigcol 0 :resjunk false}
{TARGETENTRY :expr {VAR :varno 1 :varattno 3 :vartype 20 :vartypmod -1 :varcollid 0 :varnullingrels (b) :varlevelsup 0 :varreturningtype 0 :varnosyn 1 :varattnosyn 3 :location -1} :resno 4 :resname <> :ressortgroupref 1 :resorigtbl 0 :resorigcol 0 :resjunk true}) :override 0 :onConflict <> :returningOldAlias <> :returningNewAlias <> :returningList <> :groupClause <> :groupDistinct false :groupingSets <> :havingQual <> :windowClause <> :distinctClause <> :sortClause ({SORTGROUPCLAUSE :tleSortGroupRef 1 :eqop 410 :sortop 412 :reverse_sort false :nulls_first false :hashable true}) :limitOffset <> :limitCount <> :limitOption 0 :rowMarks <> :setOperations <> :constraintDeps <> :withCheckOptions <> :stmt_location -1 :stmt_len -1})`;

describe('views: their columns followed to their tables', () => {
  it('reads the origins of the view’s own target list, not a subquery’s, leaving out constants and junk sort keys', () => {
    expect(viewColumnOrigins(SHELF)).toEqual([
      { column: 1, relation: 16392, relationColumn: 3 },
      { column: 2, relation: 16392, relationColumn: 2 },
    ]);
    expect(viewColumnOrigins('({QUERY :commandType 1 :targetList <> :override 0})')).toEqual([]);
    expect(viewColumnOrigins('')).toEqual([]);
  });

  it('follows a view over a view to the table, by name, and ends at relations it does not know', () => {
    const books = { oid: 16392, name: 'books', kind: 'table' as const, columns: new Map([[1, 'id'], [2, 'title'], [3, 'author_id']]) };
    const shelf = { oid: 20000, name: 'shelf', kind: 'view' as const, columns: new Map([[1, 'writer (id)'], [2, 'title'], [3, 'one']]) };
    const top = { oid: 20001, name: 'top', kind: 'view' as const, columns: new Map([[1, 'w'], [2, 'x']]) };
    // top: select "writer (id)" as w, (a column of a relation of another schema) as x from shelf
    const topDefinition = '({QUERY :targetList ({TARGETENTRY :expr {VAR :varno 1} :resno 1 :resname w :resorigtbl 20000 :resorigcol 1 :resjunk false} {TARGETENTRY :expr {VAR :varno 2} :resno 2 :resname x :resorigtbl 99999 :resorigcol 1 :resjunk false})})';
    expect(viewColumnSources([{ oid: 20000, definition: SHELF }, { oid: 20001, definition: topDefinition }], [books, shelf, top])).toEqual([
      { view: 'shelf', column: 'writer (id)', table: 'books', tableColumn: 'author_id' },
      { view: 'shelf', column: 'title', table: 'books', tableColumn: 'title' },
      { view: 'top', column: 'w', table: 'books', tableColumn: 'author_id' },
    ]);
  });

  it('infers each foreign key again for views showing its columns, either side, keeping its name and one-to-one-ness', () => {
    const col = (name: string) => ({ name, type: 'bigint', nullable: true, hasDefault: false });
    const snapshot = snapshotOf({
      relations: [
        { name: 'authors', kind: 'table', columns: [col('id')], primaryKey: ['id'], comment: null },
        { name: 'books', kind: 'table', columns: [col('id'), col('author_id')], primaryKey: ['id'], comment: null },
        { name: 'profiles', kind: 'table', columns: [col('author_id')], primaryKey: ['author_id'], comment: null },
        { name: 'shelf', kind: 'view', columns: [col('writer')], primaryKey: [], comment: null },
        { name: 'people', kind: 'view', columns: [col('a'), col('b')], primaryKey: [], comment: null },
        { name: 'bios', kind: 'view', columns: [col('who')], primaryKey: [], comment: null },
      ],
      foreignKeys: [
        { name: 'books_author_id_fkey', table: 'books', columns: ['author_id'], refTable: 'authors', refColumns: ['id'] },
        { name: 'profiles_author_id_fkey', table: 'profiles', columns: ['author_id'], refTable: 'authors', refColumns: ['id'] },
      ],
      viewColumns: [
        { view: 'shelf', column: 'writer', table: 'books', tableColumn: 'author_id' },
        { view: 'people', column: 'a', table: 'authors', tableColumn: 'id' },
        { view: 'people', column: 'b', table: 'authors', tableColumn: 'id' },
        { view: 'bios', column: 'who', table: 'profiles', tableColumn: 'author_id' },
      ],
    });
    const inferred = snapshot.foreignKeys.slice(2).map((fk) => `${fk.name}: ${fk.table}(${fk.columns}) → ${fk.refTable}(${fk.refColumns}) ${fk.oneToOne ? '1:1' : 'n:1'}`);
    expect(inferred).toEqual([
      'books_author_id_fkey: books(author_id) → people(a) n:1',
      'books_author_id_fkey: books(author_id) → people(b) n:1',
      'books_author_id_fkey: shelf(writer) → authors(id) n:1',
      'books_author_id_fkey: shelf(writer) → people(a) n:1',
      'books_author_id_fkey: shelf(writer) → people(b) n:1',
      'profiles_author_id_fkey: profiles(author_id) → people(a) 1:1',
      'profiles_author_id_fkey: profiles(author_id) → people(b) 1:1',
      'profiles_author_id_fkey: bios(who) → authors(id) 1:1',
      'profiles_author_id_fkey: bios(who) → people(a) 1:1',
      'profiles_author_id_fkey: bios(who) → people(b) 1:1',
    ]);
  });

  it('bounds the ways one view shows one key when its columns repeat', () => {
    const col = (name: string) => ({ name, type: 'bigint', nullable: true, hasDefault: false });
    const names = Array.from({ length: 6 }, (_, i) => `c${i}`);
    const snapshot = snapshotOf({
      relations: [
        { name: 'a', kind: 'table', columns: [col('x'), col('y')], primaryKey: ['x', 'y'], comment: null },
        { name: 'b', kind: 'table', columns: [col('x'), col('y')], primaryKey: [], comment: null },
        { name: 'v', kind: 'view', columns: names.map(col), primaryKey: [], comment: null },
      ],
      foreignKeys: [{ name: 'b_fkey', table: 'b', columns: ['x', 'y'], refTable: 'a', refColumns: ['x', 'y'] }],
      viewColumns: names.map((column, i) => ({ view: 'v', column, table: 'b', tableColumn: i % 2 === 0 ? 'x' : 'y' })),
    });
    // 3 names for x times 3 for y: 9 ways, all kept; 36 would be cut to the bound.
    expect(snapshot.foreignKeys.filter((fk) => fk.table === 'v')).toHaveLength(9);
    expect(MAX_KEY_SHOWINGS).toBeGreaterThanOrEqual(9);
  });

  it('infers a view’s primary key from the whole primary keys of the tables it shows, by the view’s column names', () => {
    const col = (name: string) => ({ name, type: 'bigint', nullable: true, hasDefault: false });
    const view = (name: string, ...columns: string[]) => ({ name, kind: 'view' as const, columns: columns.map(col), primaryKey: [], comment: null });
    const snapshot = snapshotOf({
      relations: [
        { name: 'posts', kind: 'table', columns: [col('id'), col('title')], primaryKey: ['id'], comment: null },
        { name: 'tags', kind: 'table', columns: [col('post_id'), col('tag')], primaryKey: ['post_id', 'tag'], comment: null },
        { name: 'notes', kind: 'table', columns: [col('body')], primaryKey: [], comment: null },
        view('renamed', 'title', 'key'),
        view('twice', 'a', 'b'),
        view('over_renamed', 'k2'),
        view('partial', 'post_id'),
        view('joined', 'tag', 'post_id', 'id'),
        view('keyless', 'body'),
        view('no_key_column', 'title'),
      ],
      viewColumns: [
        { view: 'renamed', column: 'title', table: 'posts', tableColumn: 'title' },
        { view: 'renamed', column: 'key', table: 'posts', tableColumn: 'id' },
        { view: 'twice', column: 'a', table: 'posts', tableColumn: 'id' },
        { view: 'twice', column: 'b', table: 'posts', tableColumn: 'id' },
        { view: 'over_renamed', column: 'k2', table: 'posts', tableColumn: 'id' },
        { view: 'partial', column: 'post_id', table: 'tags', tableColumn: 'post_id' },
        { view: 'joined', column: 'tag', table: 'tags', tableColumn: 'tag' },
        { view: 'joined', column: 'post_id', table: 'tags', tableColumn: 'post_id' },
        { view: 'joined', column: 'id', table: 'posts', tableColumn: 'id' },
        { view: 'keyless', column: 'body', table: 'notes', tableColumn: 'body' },
        { view: 'no_key_column', column: 'title', table: 'posts', tableColumn: 'title' },
      ],
    });
    const keys = Object.fromEntries([...snapshot.relations.values()].map((r) => [r.name, r.primaryKey]));
    expect(keys).toEqual({
      posts: ['id'],
      tags: ['post_id', 'tag'],
      notes: [],
      renamed: ['key'],
      // A column shown twice: the first, as PostgREST picks.
      twice: ['a'],
      over_renamed: ['k2'],
      // Part of a key is no key.
      partial: [],
      // A join showing both tables' keys has both, each in its table's key order.
      joined: ['post_id', 'tag', 'id'],
      keyless: [],
      no_key_column: [],
    });
  });

  it('reads views and functions of a row from the catalog: inferred keys, computed fields and computed relationships', () => {
    const column = (name: string, attnum: number) => ({ name, type: 'bigint', nullable: true, hasDefault: false, attnum });
    const snapshot = snapshotFromCatalog(JSON.stringify({
      relations: [
        { name: 'authors', oid: 16384, kind: 'table', relkind: 'r', comment: null, columns: [column('id', 1), column('name', 2)], primaryKey: ['id'], uniqueKeys: [['id']] },
        { name: 'books', oid: 16392, kind: 'table', relkind: 'r', comment: null, columns: [column('id', 1), column('title', 2), column('author_id', 3)], primaryKey: ['id'], uniqueKeys: [['id']] },
        { name: 'shelf', oid: 20000, kind: 'view', relkind: 'v', comment: null, columns: [column('writer (id)', 1), column('title', 2), column('one', 3)], primaryKey: [], uniqueKeys: [] },
      ],
      foreignKeys: [{ name: 'books_author_id_fkey', table: 'books', refTable: 'authors', columns: ['author_id'], refColumns: ['id'] }],
      functions: [],
      rowFunctions: [
        { name: 'shout', relation: 'authors', type: 'text', returnsSet: false, returnsRowOf: null, oneRow: false },
        { name: 'books_of', relation: 'authors', type: 'books', returnsSet: true, returnsRowOf: 'books', oneRow: false },
        { name: 'author_of', relation: 'books', type: 'authors', returnsSet: true, returnsRowOf: 'authors', oneRow: true },
        { name: 'first_book', relation: 'authors', type: 'books', returnsSet: false, returnsRowOf: 'books', oneRow: false },
        { name: 'words', relation: 'books', type: 'text', returnsSet: true, returnsRowOf: null, oneRow: false },
        // Further arguments with defaults: a computed field (PostgreSQL calls it on the row alone), but no relationship, as in PostgREST.
        { name: 'padded', relation: 'books', type: 'text', returnsSet: false, returnsRowOf: null, oneRow: false, arguments: 2 },
        { name: 'sequels', relation: 'books', type: 'books', returnsSet: true, returnsRowOf: 'books', oneRow: false, arguments: 2 },
      ],
      views: [{ oid: 20000, definition: SHELF }],
    }));
    // shelf shows books' title and author_id, not its key: no key inferred.
    expect(snapshot.relations.get('shelf')?.primaryKey).toEqual([]);
    expect(snapshot.foreignKeys.at(-1)).toEqual({ name: 'books_author_id_fkey', table: 'shelf', columns: ['writer (id)'], refTable: 'authors', refColumns: ['id'], oneToOne: false });
    expect(snapshot.relations.get('shelf')?.columns.map((c) => Object.keys(c))).toEqual([['name', 'type', 'nullable', 'hasDefault'], ['name', 'type', 'nullable', 'hasDefault'], ['name', 'type', 'nullable', 'hasDefault']]);
    const authors = snapshot.relations.get('authors')!;
    expect([...authors.computedFields.values()]).toEqual([
      { name: 'shout', type: 'text', nullable: true, hasDefault: false, computedOf: 'authors' },
      { name: 'first_book', type: 'books', nullable: true, hasDefault: false, computedOf: 'authors' },
    ]);
    expect([...authors.computedRelationships.values()]).toEqual([
      { function: 'books_of', relation: 'authors', target: 'books', toOne: false },
      { function: 'first_book', relation: 'authors', target: 'books', toOne: true },
    ]);
    // A set of values is neither: no column holds a set.
    expect(snapshot.relations.get('books')?.computedFields.has('words')).toBe(false);
    expect(snapshot.relations.get('books')?.computedRelationships.get('author_of')).toMatchObject({ target: 'authors', toOne: true });
    expect(snapshot.relations.get('books')?.computedFields.has('padded')).toBe(true);
    expect(snapshot.relations.get('books')?.computedRelationships.has('sequels')).toBe(false);
  });
});

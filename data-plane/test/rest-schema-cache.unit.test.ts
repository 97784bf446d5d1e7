/**
 * The schema cache: one load shared by concurrent requests, dropped on
 * demand, a failed load not kept, and a miss reloading at most once per
 * interval; and the catalog's rows read into a snapshot.
 */
import { describe, expect, it } from 'vitest';
import { SchemaCache, snapshotFromCatalog } from '../src/rest/schema-cache';
import { snapshotOf, type SchemaSnapshot } from '../src/rest/schema-model';

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
  it('reads relations, keys and functions, leaving out functions with unnamed arguments', () => {
    const snapshot = snapshotFromCatalog(JSON.stringify({
      relations: [{ name: 'posts', kind: 'table', comment: null, columns: [{ name: 'id', type: 'bigint', nullable: false, hasDefault: true }], primaryKey: ['id'] }],
      foreignKeys: [],
      functions: [
        { name: 'f', returnsSet: true, returnsVoid: false, volatile: false, returnType: 'record', argNames: ['a', 'x', 'y'], argModes: ['i', 't', 't'], argTypes: ['integer', 'text', 'bigint'], inputCount: 1, defaultCount: 0, rowColumns: null },
        { name: 'g', returnsSet: false, returnsVoid: false, volatile: true, returnType: 'integer', argNames: [], argModes: [], argTypes: ['integer'], inputCount: 1, defaultCount: 0, rowColumns: null },
        { name: 'h', returnsSet: false, returnsVoid: false, volatile: false, returnType: 'integer', argNames: ['a', 'b'], argModes: [], argTypes: ['integer', 'integer'], inputCount: 2, defaultCount: 1, rowColumns: null },
      ],
    }));
    expect(snapshot.relations.get('posts')?.columnsByName.get('id')?.type).toBe('bigint');
    expect(snapshot.functions.get('f')?.[0]).toMatchObject({ args: [{ name: 'a', type: 'integer', hasDefault: false }], returnsRow: true, resultColumns: [{ name: 'x', type: 'text' }, { name: 'y', type: 'bigint' }] });
    expect(snapshot.functions.has('g')).toBe(false);
    expect(snapshot.functions.get('h')?.[0]?.args).toEqual([{ name: 'a', type: 'integer', hasDefault: false }, { name: 'b', type: 'integer', hasDefault: true }]);
  });
});

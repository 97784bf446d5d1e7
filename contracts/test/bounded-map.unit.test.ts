/** The caches' eviction rule: full, the oldest entry goes; setting a key again makes it the newest. */
import { describe, expect, it } from 'vitest';
import { setBounded } from '../src/bounded-map';

describe('setBounded', () => {
  it('drops the oldest entry once the map holds its bound', () => {
    const map = new Map<string, number>();
    for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) setBounded(map, key, i, 3);
    expect([...map]).toEqual([['b', 1], ['c', 2], ['d', 3]]);
  });

  it('setting a key again replaces its value, makes it the newest, and drops nothing else', () => {
    const map = new Map<string, number>([['a', 0], ['b', 1], ['c', 2]]);
    setBounded(map, 'a', 9, 3);
    expect([...map]).toEqual([['b', 1], ['c', 2], ['a', 9]]);
    setBounded(map, 'd', 3, 3);
    expect([...map.keys()]).toEqual(['c', 'a', 'd']);
  });
});

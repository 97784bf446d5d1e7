/** The data API's two connection settings: defaults, bounds, and a clear refusal of anything else. */
import { describe, expect, it } from 'vitest';
import { dataApiMaxRows, dataApiPipelines, dataApiPoolSize } from '../src/rest/data-api';

describe('DATA_API_POOL_SIZE and DATA_API_PIPELINES', () => {
  it('default to 10 exclusive connections and 2 shared ones', () => {
    expect(dataApiPoolSize({})).toBe(10);
    expect(dataApiPipelines({ DATA_API_PIPELINES: ' ' })).toBe(2);
  });

  it('take whole numbers within their bounds; 0 pipelines turns sharing off', () => {
    expect(dataApiPoolSize({ DATA_API_POOL_SIZE: '4' })).toBe(4);
    expect(dataApiPipelines({ DATA_API_PIPELINES: '0' })).toBe(0);
    expect(dataApiPipelines({ DATA_API_PIPELINES: '100' })).toBe(100);
  });

  it('refuse anything else, naming the variable', () => {
    expect(() => dataApiPoolSize({ DATA_API_POOL_SIZE: '0' })).toThrow(/DATA_API_POOL_SIZE/);
    for (const bad of ['-1', '1.5', 'two', '101']) expect(() => dataApiPipelines({ DATA_API_PIPELINES: bad })).toThrow(/DATA_API_PIPELINES.*whole number from 0 to 100/);
  });
});

describe('DATA_API_MAX_ROWS', () => {
  it('defaults to 1,000 rows, as Supabase; 0 is no cap, as PostgREST', () => {
    expect(dataApiMaxRows({})).toBe(1000);
    expect(dataApiMaxRows({ DATA_API_MAX_ROWS: '25' })).toBe(25);
    expect(dataApiMaxRows({ DATA_API_MAX_ROWS: '0' })).toBeUndefined();
  });

  it('refuses anything but a whole number, naming the variable', () => {
    for (const bad of ['-1', '1.5', 'many', '1e3', '9999999999']) expect(() => dataApiMaxRows({ DATA_API_MAX_ROWS: bad })).toThrow(/DATA_API_MAX_ROWS.*whole number/);
  });
});

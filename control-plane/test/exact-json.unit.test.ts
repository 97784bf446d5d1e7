/**
 * The rows API's JSON with numbers as written: what JSON.parse keeps stays a
 * number, what it would change is a JsonNumber of its text, strings are never
 * touched, and encodeValue gives PostgreSQL that text where the column takes it.
 */
import { describe, expect, it } from 'vitest';
import { JsonNumber, parseExactJson, stringifyExactJson } from '../src/rows/exact-json';
import { encodeValue } from '../src/rows/rows-sql';

describe('parseExactJson', () => {
  it('parses as JSON.parse does where numbers print back as written', () => {
    const text = '{"a":1,"b":-2.5,"c":[0,true,null,"x"],"d":{"e":"9007199254740993"},"f":0.1}';
    expect(parseExactJson(text)).toEqual(JSON.parse(text));
  });

  it('keeps the text of numbers JavaScript would change', () => {
    expect(parseExactJson('{"id":9007199254740993,"n":[1.50,1E3,-0,12345678901234567890],"ok":3}')).toEqual({
      id: new JsonNumber('9007199254740993'),
      n: [new JsonNumber('1.50'), new JsonNumber('1E3'), new JsonNumber('-0'), new JsonNumber('12345678901234567890')],
      ok: 3,
    });
  });

  it('leaves strings alone, escaped quotes and digits in keys included', () => {
    const text = '{"9007199254740993":"say \\"9007199254740993\\" \\\\","k":"1.50","v":9007199254740993}';
    const parsed = parseExactJson(text) as Record<string, unknown>;
    expect(parsed['9007199254740993']).toBe('say "9007199254740993" \\');
    expect(parsed.k).toBe('1.50');
    expect(parsed.v).toEqual(new JsonNumber('9007199254740993'));
  });

  it('refuses what JSON.parse refuses', () => {
    expect(() => parseExactJson('{"a":01}')).toThrow(SyntaxError);
    expect(() => parseExactJson('{"a":9007199254740993')).toThrow(SyntaxError);
  });

  it('takes nesting as deep as JSON.parse does', () => {
    const text = `${'['.repeat(5000)}9007199254740993${']'.repeat(5000)}`;
    let value = parseExactJson(text);
    for (let depth = 0; depth < 5000; depth++) value = (value as unknown[])[0];
    expect(value).toEqual(new JsonNumber('9007199254740993'));
  });
});

describe('stringifyExactJson', () => {
  it('writes each JsonNumber as its text and the rest as JSON.stringify does', () => {
    const value = parseExactJson('{"n":12345678901234567890,"list":[1.50,2],"s":"1.50"}');
    expect(stringifyExactJson(value)).toBe('{"n":12345678901234567890,"list":[1.50,2],"s":"1.50"}');
    expect(stringifyExactJson({ a: [1, 'x'] })).toBe('{"a":[1,"x"]}');
  });

  it('writes what JSON.stringify writes, for every kind of JSON value', () => {
    const values: unknown[] = [
      null, true, 0, -0, 1.5, 1e21, Number.NaN, 'say "hi"\n\u2028', [], {}, [null, [[]], {}], { '': 1, __proto__: 2, 'a"b': [true, 'x'], nested: { deeper: [1, { k: null }] } },
      { skipped: undefined, fn: () => 1, kept: 1 }, [undefined, () => 1], { at: new Date(0) }, JSON.parse('{"__proto__":{"x":1}}'),
    ];
    for (const value of values) expect(stringifyExactJson(value), String(JSON.stringify(value))).toBe(JSON.stringify(value));
  });

  it('writes a value nested deeper than JSON.stringify can (no recursion)', () => {
    const text = `${'{"a":['.repeat(50_000)}9007199254740993${']}'.repeat(50_000)}`;
    expect(() => JSON.stringify(JSON.parse(text))).toThrow(RangeError);
    expect(stringifyExactJson(parseExactJson(text))).toBe(text);
  });
});

describe('encodeValue with numbers as written', () => {
  const big = new JsonNumber('9007199254740993');
  it('gives integer and numeric columns the text, other columns the JavaScript number', () => {
    expect(encodeValue({ name: 'id', type: 'int8' }, big)).toBe('9007199254740993');
    expect(encodeValue({ name: 'amount', type: 'numeric(12,2)' }, new JsonNumber('1.50'))).toBe('1.50');
    expect(encodeValue({ name: 'amount', type: 'numeric' }, new JsonNumber('1E3'))).toBe('1E3');
    // int4 does not read '1.0' or '1E3': as before, the number.
    expect(encodeValue({ name: 'qty', type: 'int4' }, new JsonNumber('1.0'))).toBe(1);
    expect(encodeValue({ name: 'ratio', type: 'double precision' }, new JsonNumber('1E-3'))).toBe(0.001);
  });

  it('writes JSON columns and arrays with the text too', () => {
    expect(encodeValue({ name: 'doc', type: 'jsonb' }, { n: big })).toBe('{"n":9007199254740993}');
    expect(encodeValue({ name: 'ids', type: 'int8[]' }, [[big], [1]])).toEqual([['9007199254740993'], [1]]);
  });
});

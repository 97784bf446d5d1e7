/** Bucket names, MIME patterns and the create body as API.md → Storage accepts them. */
import { describe, expect, it } from 'vitest';
import { ApiError, CreateBucketBody, checkBucketName, checkMimePattern, toBucketSpec, validate } from '../src';

describe('checkBucketName', () => {
  it.each(['abc', 'my-bucket', 'a.b.c', 'x'.repeat(63), '123'])('accepts %j', (name) => {
    expect(checkBucketName(name)).toBe(name);
  });
  it.each(['ab', 'x'.repeat(64), 'Upper', 'under_score', '-start', 'end-', 'a..b', '192.168.1.1', 'with space', 'a/b', ''])('refuses %j with a 400', (name) => {
    expect(() => checkBucketName(name)).toThrow(ApiError);
  });
});

describe('checkMimePattern', () => {
  it('accepts type/subtype and type/*, lowercased', () => {
    expect(checkMimePattern('image/*')).toBe('image/*');
    expect(checkMimePattern('Application/vnd.ms-excel')).toBe('application/vnd.ms-excel');
    expect(checkMimePattern('image/svg+xml')).toBe('image/svg+xml');
  });
  it.each(['image', '*/*', 'image/', '/png', 'image/png; charset=x', 'a/b/c'])('refuses %j', (pattern) => {
    expect(() => checkMimePattern(pattern)).toThrow(ApiError);
  });
});

describe('create body', () => {
  it('defaults to private, no limit, any type; deduplicates patterns', () => {
    expect(toBucketSpec(validate(CreateBucketBody, { name: 'docs' }))).toEqual({ name: 'docs', public: false, fileSizeLimit: null, allowedMimeTypes: null });
    expect(toBucketSpec(validate(CreateBucketBody, { name: 'img', public: true, fileSizeLimit: 1024, allowedMimeTypes: ['image/*', 'IMAGE/*'] }))).toEqual({
      name: 'img', public: true, fileSizeLimit: 1024, allowedMimeTypes: ['image/*'],
    });
  });
  it('refuses a size limit that is not a positive integer, too many patterns, an empty list and unknown fields', () => {
    for (const body of [
      { name: 'a1b', fileSizeLimit: 0 },
      { name: 'a1b', fileSizeLimit: 1.5 },
      { name: 'a1b', fileSizeLimit: '10' },
      { name: 'a1b', allowedMimeTypes: Array.from({ length: 101 }, (_, i) => `image/x${i}`) },
      { name: 'a1b', extra: true },
    ]) {
      expect(() => validate(CreateBucketBody, body), JSON.stringify(body).slice(0, 60)).toThrow(ApiError);
    }
    expect(() => toBucketSpec({ name: 'a1b', allowedMimeTypes: [] })).toThrow(ApiError);
  });
});

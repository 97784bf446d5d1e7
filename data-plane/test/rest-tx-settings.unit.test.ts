/**
 * PostgREST's `request.*` settings as a request gives them to SQL: headers
 * by lower-case name without Cookie, cookies as an object.
 */
import { describe, expect, it } from 'vitest';
import { cookiesJson, requestSettingsOf } from '../src/rest/tx-settings';

describe('request settings', () => {
  it('passes every header but Cookie, Authorization and apikey included, and the cookies apart, as PostgREST', () => {
    const settings = requestSettingsOf('POST', '/rpc/f', { 'user-agent': 'ua/1', apikey: 'k', authorization: 'Bearer t', cookie: 'a=1; b=x=y', 'x-forwarded-for': '10.0.0.1' });
    expect(settings).toMatchObject({ method: 'POST', path: '/rpc/f' });
    expect(JSON.parse(settings.headers)).toEqual({ 'user-agent': 'ua/1', apikey: 'k', authorization: 'Bearer t', 'x-forwarded-for': '10.0.0.1' });
    expect(JSON.parse(settings.cookies)).toEqual({ a: '1', b: 'x=y' });
    expect(requestSettingsOf('GET', '/posts', { host: 'h' })).toEqual({ method: 'GET', path: '/posts', headers: '{"host":"h"}', cookies: '{}' });
  });

  it('reads cookies as sent: trimmed, not decoded, the last of a name kept, __proto__ a cookie like any other', () => {
    expect(JSON.parse(cookiesJson(' a = 1 ;;b=%20;flag; a=2'))).toEqual({ a: '2', b: '%20', flag: '' });
    expect(cookiesJson('__proto__=x')).toBe('{"__proto__":"x"}');
    expect(cookiesJson(undefined)).toBe('{}');
  });
});

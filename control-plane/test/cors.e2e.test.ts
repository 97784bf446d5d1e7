/**
 * The operator API answers browsers of any origin (the management client runs
 * in pages other than the dashboard): preflights pass, and answers, errors
 * included, carry the CORS headers. No cookie is ever involved, so `*` is safe.
 */
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { bearer, signUpOperator } from '../../deploy/test/http';

const ORIGIN = 'http://app.example.com';

describe('CORS on /api', () => {
  it('passes a preflight for an authorised JSON call', async () => {
    const response = await fetch(new URL('/api/projects', inject('baseUrl')), {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-methods')).toContain('POST');
    expect(response.headers.get('access-control-allow-headers')).toContain('authorization');
  });

  it('marks answers and errors alike, exposing Location', async () => {
    const operator = await signUpOperator('Cors');
    const ok = await fetch(new URL('/api/projects', inject('baseUrl')), { headers: { origin: ORIGIN, ...bearer(operator.token) } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    expect(ok.headers.get('access-control-expose-headers')).toContain('location');
    const refused = await fetch(new URL('/api/projects', inject('baseUrl')), { headers: { origin: ORIGIN } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('answers an OPTIONS that is not a preflight as one, not with a refusal in plain text', async () => {
    for (const headers of [{}, { origin: ORIGIN }, { 'access-control-request-method': 'POST' }] as Array<Record<string, string>>) {
      const response = await fetch(new URL('/api/projects', inject('baseUrl')), { method: 'OPTIONS', headers });
      expect(response.status, JSON.stringify(headers)).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
    }
  });
});

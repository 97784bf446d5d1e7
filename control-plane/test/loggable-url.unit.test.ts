/** The URL a failed request is logged with never carries the service key it may have come with (`?apikey=`). */
import { expect, it } from 'vitest';
import { loggableUrl } from '../src/http/api-error.filter';

it('redacts the apikey parameter however it is spelt, and keeps the rest of the URL', () => {
  expect(loggableUrl('/api/projects/p/tables/t/rows?id=eq.1&apikey=bp_service_abc&order=id')).toBe('/api/projects/p/tables/t/rows?id=eq.1&apikey=[redacted]&order=id');
  expect(loggableUrl('/api/sql/execute?apikey=bp_service_abc')).toBe('/api/sql/execute?apikey=[redacted]');
  expect(loggableUrl('/x?api%6Bey=bp_service_abc&APIKEY=bp_anon_x&apikey')).toBe('/x?api%6Bey=[redacted]&APIKEY=[redacted]&apikey=[redacted]');
  expect(loggableUrl('/x?a=%ZZ&apikey=k')).toBe('/x?a=%ZZ&apikey=[redacted]');
  expect(loggableUrl('/api/projects/p')).toBe('/api/projects/p');
  expect(loggableUrl('/api/projects/p?teamId=t')).toBe('/api/projects/p?teamId=t');
});

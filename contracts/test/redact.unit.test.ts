/** redact(): what an error line or the operator API shows of a URL holding credentials. */
import { expect, it } from 'vitest';
import { redact } from '../src/config';

it('hides the password of every URL, whatever it holds', () => {
  expect(redact('smtp://mailer:s3cret@127.0.0.1:2525')).toBe('smtp://mailer:***@127.0.0.1:2525');
  expect(redact('smtp://:s3cret@mail.example.com')).toBe('smtp://:***@mail.example.com');
  expect(redact('smtps://mailer:s3c@ret@mail.example.com:465')).toBe('smtps://mailer:***@mail.example.com:465');
  expect(redact('smtp://mailer:@host')).toBe('smtp://mailer:***@host');
  expect(redact('connect postgres://a:one@h1/db and postgres://b:two@h2/db')).toBe('connect postgres://a:***@h1/db and postgres://b:***@h2/db');
  expect(redact('postgres://postgres:p%40ss@127.0.0.1:5432/baseplane?sslmode=disable')).toBe('postgres://postgres:***@127.0.0.1:5432/baseplane?sslmode=disable');
});

// A password holding a raw `#`, `/` or `?` ends the authority for a URL parser, so the `@` after it was past
// where the credentials were looked for: the operator API showed such an SMTP password whole.
it('hides a password holding a raw #, / or ?', () => {
  expect(redact('smtp://mailer:s3c#ret@mail.example.com')).toBe('smtp://mailer:***@mail.example.com');
  expect(redact('smtp://mailer:s3c/ret@mail.example.com:25')).toBe('smtp://mailer:***@mail.example.com:25');
  expect(redact('smtps://mailer:s3c?ret@mail.example.com')).toBe('smtps://mailer:***@mail.example.com');
  expect(redact('smtp://:a/b?c#d@h')).toBe('smtp://:***@h');
  expect(redact('postgres://a:one@h1/db?opt=x@y')).toBe('postgres://a:***@h1/db?opt=x@y');
  expect(redact('smtp://a:1/b@h and smtp://c:s/d@h2')).toBe('smtp://a:1/b@h and smtp://c:***@h2');
});

it('leaves URLs without a password as they are', () => {
  for (const url of ['smtp://127.0.0.1:2525', 'smtp://mailer@host:25', 'http://localhost:8000/a?to=x@example.com', 'http://example.com/a?to=x@example.com', 'http://h:80/#a@b', 'not a url']) expect(redact(url)).toBe(url);
});

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

it('leaves URLs without a password as they are', () => {
  for (const url of ['smtp://127.0.0.1:2525', 'smtp://mailer@host:25', 'http://localhost:8000/a?to=x@example.com', 'not a url']) expect(redact(url)).toBe(url);
});

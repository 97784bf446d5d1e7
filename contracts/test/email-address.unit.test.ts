/**
 * checkEmailAddress: what an address may be. It must be one mailbox to any
 * address parser, since the mailer delivers to what a parser makes of it
 * while the account (and its token's `email`) keeps the whole string.
 */
import { describe, expect, it } from 'vitest';
import { checkEmailAddress } from '../src/auth';
import { ApiError } from '../src/errors';

describe('checkEmailAddress', () => {
  it.each([
    'ada@example.com',
    "o'brien+news@mail.example.co.uk",
    'a.b-c_d!#$%&*/=?^`{|}~@example.com',
    // Letters beyond ASCII, as RFC 6531 allows, in the local part and the domain; and as JavaScript lowercases İ.
    'Dİnç@Example.com',
    'di\u0307nç@example.com',
    'ada@exämple.com',
    'ада@пример.рф',
    // 254 bytes, the most SMTP carries (RFC 5321's path, less its angle brackets), in ASCII and in UTF-8.
    `${'a'.repeat(242)}@example.com`,
    `${'ü'.repeat(121)}@example.com`,
  ])('takes %s as it is', (email) => {
    expect(checkEmailAddress(email)).toBe(email);
  });

  it.each([
    // What an address-list parser (nodemailer's) reads as another mailbox than the whole string.
    'atk@example.com(example.org)',
    '<atk@example.com>example.org',
    '(x)@example.com',
    'a,b@example.com',
    'a@example.com, b@example.com',
    'a;b@example.com',
    'a:b@example.com',
    '"a b"@example.com',
    'a\\b@example.com',
    'a@[192.0.2.1]',
    // Whitespace, control and invisible characters, punctuation beyond ASCII.
    'a b@example.com',
    'a\tb@example.com',
    'a\u0007b@example.com',
    'a\u200bb@example.com',
    'a\uff0cb@example.com',
    // Not a dot-atom, or not a domain of labels.
    'nope',
    '@example.com',
    'a@',
    'a@example',
    '.a@example.com',
    'a.@example.com',
    'a..b@example.com',
    'a@example..com',
    'a@example.com.',
    'a@-example.com',
    'a@example-.com',
    'a@b@example.com',
    // Longer than any mail server takes: 255 bytes, and 320 characters (the most a body may carry).
    `${'a'.repeat(243)}@example.com`,
    `${'ü'.repeat(121)}a@example.com`,
    `${'a'.repeat(308)}@example.com`,
  ])('refuses %j with 400 invalid_email', (email) => {
    let refusal: unknown;
    try {
      checkEmailAddress(email);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(ApiError);
    expect(refusal).toMatchObject({ status: 400, code: 'invalid_email' });
  });
});

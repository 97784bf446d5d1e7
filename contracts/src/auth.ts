/**
 * End-user auth (API.md → End-user auth): request bodies as TypeBox schemas,
 * the session and user shapes, and the access-token claims.
 */
import { Type, type Static, type StringOptions } from '@sinclair/typebox';
import { ApiError } from './errors';
import { invalidInput } from './validate';

/**
 * The one string of every auth body, its length bounded. A NUL character,
 * which PostgreSQL cannot store in text or jsonb, is refused for every
 * validated input by `validate()` itself.
 */
const Text = (options: StringOptions & { maxLength: number; patternMessage?: string }) => Type.String(options);

const Email = Text({ maxLength: 320 });
const Password = Text({ maxLength: 1024 });
const Name = Text({ maxLength: 200 });

export const EndUserSignupBody = Type.Object(
  { email: Email, password: Password, firstName: Type.Optional(Name), lastName: Type.Optional(Name), username: Type.Optional(Name) },
  { additionalProperties: false },
);
export type EndUserSignupBody = Static<typeof EndUserSignupBody>;

export const EndUserSigninBody = Type.Object({ email: Email, password: Password }, { additionalProperties: false });
export type EndUserSigninBody = Static<typeof EndUserSigninBody>;

export const EndUserRefreshBody = Type.Object({ refreshToken: Text({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false });

export const EndUserLogoutBody = Type.Object({ scope: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('global')])) }, { additionalProperties: false });

/** A project user as the API shows it. */
export interface EndUser {
  id: string;
  email: string;
  username: string | null;
  emailVerified: boolean;
  firstName: string | null;
  lastName: string | null;
  avatarUrl: string | null;
  providers: string[];
  createdAt: string;
  updatedAt: string;
  lastSignInAt: string | null;
}

export interface EndUserSession {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  tokenType: 'bearer';
  user?: EndUser;
}

/** Claims of an end-user access token. */
export interface AccessTokenClaims {
  sub: string;
  role: 'authenticated';
  aud: 'authenticated';
  iss: string;
  exp: number;
  iat: number;
  email: string;
  email_verified: boolean;
  session_id: string;
  ref: string;
}

/** A character of a local part's atoms: RFC 5322's atext, and any letter, mark or digit beyond ASCII (RFC 6531). */
const ATEXT = "[\\p{L}\\p{M}\\p{Nd}!#$%&'*+\\-/=?^_`{|}~]";
/** A domain label: letters, marks and digits (any script), inner hyphens. */
const LABEL = '[\\p{L}\\p{Nd}](?:[\\p{L}\\p{M}\\p{Nd}-]*[\\p{L}\\p{M}\\p{Nd}])?';

/**
 * local@domain.tld: a dot-atom local part and a domain of two or more
 * dot-separated labels. Nothing an address parser reads as more than one
 * mailbox gets through (whitespace, control characters, `()<>[],;:"\`, quoted
 * local parts, address literals): the mailer must deliver to exactly the
 * address that is stored and put in tokens as verified.
 */
export const EMAIL_PATTERN = new RegExp(`^${ATEXT}+(?:\\.${ATEXT}+)*@${LABEL}(?:\\.${LABEL})+$`, 'u');

/** The longest address SMTP carries: RFC 5321's path of 256 octets, less its angle brackets (4.5.3.1.3). */
export const MAX_EMAIL_OCTETS = 254;

/** An address of {@link EMAIL_PATTERN}'s form, else 400 `invalid_email` (API.md's code, for end users and operators alike). */
export function checkEmailAddress(email: string): string {
  if (!EMAIL_PATTERN.test(email)) throw new ApiError(400, 'invalid_email', 'invalid email address');
  // Longer, no mail server takes it (a 503 "try again later" that never passes, after a sign-up without mail kept it).
  if (new TextEncoder().encode(email).length > MAX_EMAIL_OCTETS) {
    throw new ApiError(400, 'invalid_email', `an email address has at most ${MAX_EMAIL_OCTETS} bytes`, { maxBytes: MAX_EMAIL_OCTETS });
  }
  return email;
}

/**
 * An end user's address in its one normal form: lowercased by JavaScript, as
 * GoTrue stores them. It is what is stored, what the per-address limits count,
 * and what lookups compare `lower(email)` with. It has no capitals left, so
 * PostgreSQL's `lower()` keeps it as it is, whatever the collation, while
 * `lower()` of a typed address need not agree with it (`İ` lowers to `i̇`
 * here and to `i` in C.UTF-8): an address never reaches SQL as typed.
 */
export const emailKey = (email: string): string => email.toLowerCase();

const Otp = Text({ minLength: 1, maxLength: 32 });

export const EmailOnlyBody = Type.Object({ email: Email }, { additionalProperties: false });
export const ResendBody = Type.Object({ email: Email, type: Type.Union([Type.Literal('signup'), Type.Literal('email_change')]) }, { additionalProperties: false });
export const VerifyCodeBody = Type.Object({ otp: Otp, email: Type.Optional(Email) }, { additionalProperties: false });
export const ResetPasswordBody = Type.Object({ otp: Otp, newPassword: Password, email: Type.Optional(Email) }, { additionalProperties: false });

const HttpUrl = Text({ maxLength: 2048, pattern: '^https?://[^\\s\\x00]+$', patternMessage: 'must be an http:// or https:// URL without spaces' });

/** A project's SMTP server as events carry it: the URL (it holds credentials) sealed. */
export interface StoredSmtp {
  urlCipher: string;
  from: string;
}

/**
 * A project's auth settings (API.md → Project auth settings) as events and
 * caches hold them; `smtp` is null when mail goes through the platform's server.
 */
export interface StoredAuthSettings {
  requireEmailVerification: boolean;
  allowSignups: boolean;
  /** Seconds. */
  accessTokenTtl: number;
  refreshTokenTtl: number;
  otpTtl: number;
  passwordMinLength: number;
  siteUrl: string | null;
  redirectUrls: string[];
  requireReauthForPasswordChange: boolean;
  smtp: StoredSmtp | null;
}

/** Settings as the operator API shows them: the SMTP URL with its password masked. */
export type AuthSettings = Omit<StoredAuthSettings, 'smtp'> & { smtp: { url: string; from: string } | null };

export const DEFAULT_AUTH_SETTINGS: StoredAuthSettings = {
  requireEmailVerification: false,
  allowSignups: true,
  accessTokenTtl: 3600,
  refreshTokenTtl: 2_592_000,
  otpTtl: 600,
  passwordMinLength: 8,
  siteUrl: null,
  redirectUrls: [],
  requireReauthForPasswordChange: false,
  smtp: null,
};

/** `PATCH /api/projects/:id/auth/settings`: any subset; `smtp: null` goes back to the platform's server. */
export const UpdateAuthSettingsBody = Type.Object(
  {
    requireEmailVerification: Type.Optional(Type.Boolean()),
    allowSignups: Type.Optional(Type.Boolean()),
    accessTokenTtl: Type.Optional(Type.Integer({ minimum: 60, maximum: 604_800 })),
    refreshTokenTtl: Type.Optional(Type.Integer({ minimum: 3600, maximum: 31_536_000 })),
    otpTtl: Type.Optional(Type.Integer({ minimum: 60, maximum: 86_400 })),
    passwordMinLength: Type.Optional(Type.Integer({ minimum: 6, maximum: 128 })),
    siteUrl: Type.Optional(Type.Union([HttpUrl, Type.Null()])),
    redirectUrls: Type.Optional(Type.Array(HttpUrl, { maxItems: 100 })),
    requireReauthForPasswordChange: Type.Optional(Type.Boolean()),
    smtp: Type.Optional(
      Type.Union([
        Type.Object(
          {
            url: Text({ maxLength: 2048, pattern: '^smtps?://[^\\s\\x00]+$', patternMessage: 'must be an smtp:// or smtps:// URL without spaces' }),
            from: Text({ minLength: 3, maxLength: 320, pattern: '^[^\\x00]*@[^\\x00]*$', patternMessage: 'must be an address (with @) without a NUL character' }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateAuthSettingsBody = Static<typeof UpdateAuthSettingsBody>;

/**
 * A settings change's URLs, once the body has its shape: each must be one
 * `new URL()` parses (the pattern lets through a port past 65535 or
 * `http://[::1`), since the data plane compares redirect targets with them as
 * URLs. Else 400 `invalid_request` naming each, as `validate()` answers (`invalidInput`).
 */
export function checkAuthSettingsUrls(body: UpdateAuthSettingsBody): void {
  const urls: Array<[string, string]> = [];
  if (typeof body.siteUrl === 'string') urls.push(['/siteUrl', body.siteUrl]);
  body.redirectUrls?.forEach((url, index) => urls.push([`/redirectUrls/${index}`, url]));
  const message = 'must be a URL that parses (a valid host, a port up to 65535)';
  const errors = urls.filter(([, url]) => !URL.canParse(url)).map(([path]) => ({ path, message }));
  if (errors.length > 0) throw invalidInput('body', errors);
}

/** `PATCH /me`: the user's own profile, and a new password. */
export const UpdateMeBody = Type.Object(
  { firstName: Type.Optional(Name), lastName: Type.Optional(Name), username: Type.Optional(Name), password: Type.Optional(Password) },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateMeBody = Static<typeof UpdateMeBody>;

export const ChangeEmailBody = Type.Object({ newEmail: Email }, { additionalProperties: false });
export const OtpOnlyBody = Type.Object({ otp: Otp }, { additionalProperties: false });
export const InviteBody = Type.Object({ email: Email, redirectTo: Type.Optional(Text({ maxLength: 2048 })) }, { additionalProperties: false });

/** Operators' users API (`/api/projects/:id/auth/users`). */
export const ListEndUsersQuery = Type.Object(
  {
    search: Type.Optional(Text({ maxLength: 320 })),
    limit: Type.Optional(Type.String({ pattern: '^\\d{1,4}$', patternMessage: 'must be a whole number of at most 4 digits' })),
    offset: Type.Optional(Type.String({ pattern: '^\\d{1,9}$', patternMessage: 'must be a whole number of at most 9 digits' })),
  },
  { additionalProperties: false },
);
export const CreateEndUserBody = Type.Object(
  {
    email: Email,
    password: Type.Optional(Password),
    emailVerified: Type.Optional(Type.Boolean()),
    firstName: Type.Optional(Name),
    lastName: Type.Optional(Name),
    username: Type.Optional(Name),
  },
  { additionalProperties: false },
);
export type CreateEndUserBody = Static<typeof CreateEndUserBody>;
export const UpdateEndUserBody = Type.Object(
  {
    email: Type.Optional(Email),
    password: Type.Optional(Password),
    emailVerified: Type.Optional(Type.Boolean()),
    firstName: Type.Optional(Type.Union([Name, Type.Null()])),
    lastName: Type.Optional(Type.Union([Name, Type.Null()])),
    username: Type.Optional(Type.Union([Name, Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateEndUserBody = Static<typeof UpdateEndUserBody>;

/** argon2id cost of every password (platform accounts and end users): OWASP's minimum, 19 MiB, t=2, p=1. */
export const PASSWORD_HASH_COST = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

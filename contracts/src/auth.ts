/**
 * End-user auth (API.md → End-user auth): request bodies as TypeBox schemas,
 * the session and user shapes, and the access-token claims.
 */
import { Type, type Static } from '@sinclair/typebox';

const Email = Type.String({ maxLength: 320 });
const Password = Type.String({ maxLength: 1024 });
const Name = Type.String({ maxLength: 200 });

export const EndUserSignupBody = Type.Object(
  { email: Email, password: Password, firstName: Type.Optional(Name), lastName: Type.Optional(Name), username: Type.Optional(Name) },
  { additionalProperties: false },
);
export type EndUserSignupBody = Static<typeof EndUserSignupBody>;

export const EndUserSigninBody = Type.Object({ email: Email, password: Password }, { additionalProperties: false });
export type EndUserSigninBody = Static<typeof EndUserSigninBody>;

export const EndUserRefreshBody = Type.Object({ refreshToken: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false });

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

export const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const Otp = Type.String({ minLength: 1, maxLength: 32 });

export const EmailOnlyBody = Type.Object({ email: Email }, { additionalProperties: false });
export const ResendBody = Type.Object({ email: Email, type: Type.Union([Type.Literal('signup'), Type.Literal('email_change')]) }, { additionalProperties: false });
export const VerifyCodeBody = Type.Object({ otp: Otp, email: Type.Optional(Email) }, { additionalProperties: false });
export const ResetPasswordBody = Type.Object({ otp: Otp, newPassword: Password, email: Type.Optional(Email) }, { additionalProperties: false });

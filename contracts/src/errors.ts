/**
 * The one error type every HTTP answer of Baseplane is made from, with the
 * stable codes of API.md. Pure data: the planes map it to a response.
 */

export type ErrorCode =
  | 'invalid_request' | 'invalid_json' | 'invalid_credentials' | 'weak_password' | 'invalid_email'
  | 'missing_api_key' | 'invalid_api_key' | 'invalid_token' | 'token_expired' | 'refresh_token_invalid'
  | 'refresh_token_reused' | 'no_session'
  | 'forbidden' | 'service_key_required'
  | 'not_found'
  | 'user_already_exists' | 'already_exists' | 'version_conflict'
  | 'payload_too_large' | 'apply_failed' | 'rate_limited'
  | 'project_unavailable' | 'service_unavailable' | 'internal_error';

/** The flat body of every error answer. */
export interface ErrorBody {
  code: string;
  message: string;
  details: unknown;
  hint: string | null;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | string,
    message: string,
    readonly details: unknown = null,
    readonly hint: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message, details: this.details, hint: this.hint };
  }
}

export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);
export const invalidRequest = (message: string, details: unknown = null) =>
  new ApiError(400, 'invalid_request', message, details);

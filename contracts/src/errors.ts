/**
 * The one error type every HTTP answer of Baseplane is made from, with the
 * stable codes of API.md. Pure data: the planes map it to a response.
 */

export type ErrorCode =
  // 400
  | 'invalid_request' | 'invalid_json' | 'invalid_credentials' | 'weak_password' | 'invalid_email'
  | 'invalid_filter' | 'unknown_column' | 'unknown_relation' | 'filter_required' | 'invalid_schema' | 'redirect_to_not_allowed' | 'url_expired' | 'mime_type_not_allowed'
  // 401
  | 'missing_api_key' | 'invalid_api_key' | 'invalid_token' | 'token_expired' | 'refresh_token_invalid'
  | 'refresh_token_reused' | 'no_session'
  // 403
  | 'forbidden' | 'service_key_required' | 'email_not_verified' | 'reauthentication_required' | 'signups_disabled' | 'invalid_signature'
  // 404, 405, 406 (and 300 for an ambiguous embedding)
  | 'not_found' | 'method_not_allowed' | 'not_acceptable' | 'not_single_object' | 'ambiguous_relation'
  // 409
  | 'user_already_exists' | 'already_exists' | 'version_conflict' | 'bucket_not_empty' | 'last_owner'
  // 413, 415, 416, 422, 429
  | 'payload_too_large' | 'unsupported_media_type' | 'range_not_satisfiable' | 'otp_invalid' | 'otp_expired' | 'apply_failed' | 'rate_limited'
  // 5xx
  | 'project_unavailable' | 'service_unavailable' | 'email_unavailable' | 'internal_error';

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

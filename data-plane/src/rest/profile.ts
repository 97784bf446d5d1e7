/**
 * Which of the project's exposed schemas a data request is for, as PostgREST
 * picks it (`db-schemas`): `Accept-Profile` on a GET or HEAD, `Content-Profile`
 * on a write or a POSTed rpc, and without one the first schema exposed.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { ApiError } from '@baseplane/contracts';

/** The schema `method` with `headers` asks for among `exposed`; one not exposed is 406 `invalid_schema` (PostgREST's PGRST106). */
export function profileOf(method: string, headers: IncomingHttpHeaders, exposed: readonly string[]): string {
  const value = headers[method === 'GET' || method === 'HEAD' ? 'accept-profile' : 'content-profile'];
  const asked = (Array.isArray(value) ? value.join(', ') : value)?.trim();
  if (asked === undefined || asked === '') return exposed[0]!;
  if (exposed.includes(asked)) return asked;
  throw new ApiError(406, 'invalid_schema', `the schema must be one of the following: ${exposed.join(', ')}`, { exposedSchemas: exposed });
}

/**
 * Sets the answer's `Content-Profile`, the schema it came from, when the
 * project exposes more than one, as PostgREST sends it.
 */
export function sendProfile(reply: FastifyReply, schema: string, exposed: readonly string[]): void {
  if (exposed.length > 1) void reply.header('content-profile', schema);
}

/**
 * CORS for everything under a data-plane prefix (the data API, auth, JWKS):
 * browsers call these from other origins with the anon key, as they call
 * Supabase's, so any origin is allowed; what a caller may do is still decided
 * by its key, token and RLS.
 *
 * Every header of an answer is readable by the page (`*`): those the
 * project's own SQL sets (`response.headers`, a `raise sqlstate 'PGRST'`
 * answer's) as much as ours. A browser honours `*` for requests made without
 * credentials, which are the only ones `Access-Control-Allow-Origin: *`
 * admits; the names after it are for browsers that predate the wildcard.
 */
import type { FastifyInstance } from 'fastify';

const ALLOWED_HEADERS = 'apikey, authorization, content-type, accept, prefer, range, range-unit, accept-profile, content-profile, x-client-info';
const EXPOSED_HEADERS = '*, content-range, content-location, location, preference-applied, range-unit, server-timing, retry-after, etag, accept-ranges';

export function bindCors(scope: FastifyInstance): void {
  scope.addHook('onSend', async (_request, reply, payload) => {
    void reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', EXPOSED_HEADERS);
    return payload;
  });
  scope.options('/*', async (_request, reply) =>
    reply
      .status(204)
      .header('access-control-allow-methods', 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
      .header('access-control-allow-headers', ALLOWED_HEADERS)
      .header('access-control-max-age', '86400')
      .send(),
  );
}

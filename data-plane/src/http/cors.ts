/**
 * CORS for everything under a data-plane prefix (the data API, auth, JWKS):
 * browsers call these from other origins with the anon key, as they call
 * Supabase's, so any origin is allowed; what a caller may do is still decided
 * by its key, token and RLS.
 *
 * A page may send any header (its preflight's list is allowed), and every
 * header of an answer is readable by the page (`*`): those the
 * project's own SQL sets (`response.headers`, a `raise sqlstate 'PGRST'`
 * answer's) as much as ours. A browser honours `*` for requests made without
 * credentials, which are the only ones `Access-Control-Allow-Origin: *`
 * admits; the names after it are for browsers that predate the wildcard.
 */
import type { FastifyInstance } from 'fastify';

const ALLOWED_HEADERS = 'apikey, authorization, content-type, accept, prefer, range, range-unit, accept-profile, content-profile, x-client-info';
const EXPOSED_HEADERS = '*, content-range, content-location, location, preference-applied, range-unit, server-timing, retry-after, etag, accept-ranges';

/**
 * The headers a page may send: those its preflight asks for, when they are a
 * list of header names (an app's own, which policies and functions read in
 * `request.headers`), and ours besides.
 */
function allowedHeaders(asked: string | undefined): string {
  if (asked === undefined || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/.test(asked.trim())) return ALLOWED_HEADERS;
  return `${ALLOWED_HEADERS}, ${asked.trim().toLowerCase()}`;
}

export function bindCors(scope: FastifyInstance): void {
  scope.addHook('onSend', async (_request, reply, payload) => {
    void reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', EXPOSED_HEADERS);
    return payload;
  });
  scope.options('/*', async (request, reply) =>
    reply
      .status(204)
      .header('access-control-allow-methods', 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
      .header('access-control-allow-headers', allowedHeaders(request.headers['access-control-request-headers']))
      .header('access-control-max-age', '86400')
      .header('vary', 'Access-Control-Request-Headers')
      .send(),
  );
}

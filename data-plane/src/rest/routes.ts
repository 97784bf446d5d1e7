/**
 * Binds the data API, `/:table` and `/rpc/:function`, under the prefix it is
 * registered with. Each request goes the same way: resolve the caller (apikey
 * ⇒ project and role, Bearer ⇒ verified claims), parse → plan → sql →
 * execute → respond, each stage timed into `Server-Timing`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '@baseplane/contracts';
import { resolveApiCaller } from '../http/resolve-project';
import type { DataApi } from './data-api';
import { parseRequest } from './parse';
import { profileOf, sendProfile } from './profile';
import { planRequest, type Plan } from './plan';
import { checkBeforeCommit, checkedBeforeCommit, respond } from './respond';
import { UnknownNameError } from './rest-errors';
import type { SchemaSnapshot } from './schema-model';
import { statementFor } from './sql';
import { requestSettingsOf } from './tx-settings';

/** Media types a body may come in, as PostgREST: JSON, CSV for a bulk insert, and a form (one object of texts). */
const JSON_BODY = /^application\/(json|vnd\.pgrst\.object\+json|vnd\.pgrst\.object)\b/i;
const CSV_BODY = /^text\/csv\b/i;
const FORM_BODY = /^application\/x-www-form-urlencoded\b/i;

/** Times stages into a `Server-Timing` value. */
class StageTimer {
  private readonly parts: string[] = [];
  private last = performance.now();
  mark(stage: string): void {
    const now = performance.now();
    this.parts.push(`${stage};dur=${(now - this.last).toFixed(2)}`);
    this.last = now;
  }
  toString(): string {
    return this.parts.join(', ');
  }
}

/**
 * The path under the API's root as sent (`/posts`, `/rpc/my_fn`), which
 * PostgREST's `request.path` is: the route's last segment, or its last two
 * for an rpc (a name's own `/` comes encoded).
 */
function apiPath(url: string, q: number, rpc: boolean): string {
  const path = q < 0 ? url : url.slice(0, q);
  return path.slice(rpc ? path.lastIndexOf('/', path.lastIndexOf('/') - 1) : path.lastIndexOf('/'));
}

/** Plans against the cache's snapshot of `schema`; a miss reloads it once (rate-limited) before it is answered. */
async function planWithCache(api: DataApi, projectId: string, schema: string, plan: (snapshot: SchemaSnapshot) => Plan): Promise<Plan> {
  const snapshot = await api.schemas.get(projectId, schema);
  try {
    return plan(snapshot);
  } catch (error) {
    if (!(error instanceof UnknownNameError)) throw error;
    return plan(await api.schemas.reloadAfterMiss(projectId, snapshot));
  }
}

async function handle(api: DataApi, request: FastifyRequest, reply: FastifyReply, rpc: boolean): Promise<FastifyReply> {
  const timer = new StageTimer();
  // The caller: role from the key, claims from a verified Bearer token; then the schema asked for among those exposed.
  const { project, caller } = await resolveApiCaller(api.directory, api.tokens, request);
  const { projectId } = project;
  const exposed = project.restSettings.exposedSchemas;
  const schema = profileOf(request.method, request.headers, exposed);
  timer.mark('jwt');
  const params = request.params as { table?: string; fn?: string };
  const contentType = request.headers['content-type'];
  const body = typeof request.body === 'string' ? request.body : undefined;
  const bodyType = contentType === undefined ? undefined : CSV_BODY.test(contentType) ? 'csv' : FORM_BODY.test(contentType) ? 'form' : undefined;
  if (body !== undefined && body !== '' && contentType !== undefined && bodyType === undefined && !JSON_BODY.test(contentType)) {
    throw new ApiError(415, 'unsupported_media_type', `bodies are read as application/json, text/csv or application/x-www-form-urlencoded, not ${contentType}`);
  }
  const url = request.raw.url ?? '';
  const q = url.indexOf('?');
  // The zone names a timezone preference is checked against, read from PostgreSQL once per replica.
  const prefer = request.headers.prefer;
  const timeZones = prefer !== undefined && String(prefer).includes('timezone=') ? await api.pools.timeZones(projectId) : undefined;
  const parsed = parseRequest({
    method: request.method,
    target: (rpc ? params.fn : params.table) ?? '',
    rpc,
    query: q < 0 ? '' : url.slice(q + 1),
    headers: request.headers,
    body,
    bodyType,
    timeZones,
  });
  timer.mark('parse');
  // The project's own row cap, when its settings set one, else the platform's.
  const { maxRows } = project.restSettings;
  const limits = maxRows === null ? api.limits : { ...api.limits, maxRows };
  const plan = await planWithCache(api, projectId, schema, (snapshot) => planRequest(parsed, snapshot, limits));
  timer.mark('plan');
  const statement = statementFor(plan);
  timer.mark('sql');
  const readOnly = request.method === 'GET' || request.method === 'HEAD';
  // Only a write under the single-object media type, or a PUT, looks at its row before COMMIT (a refusal rolls it back); the rest commit in the same round trip.
  const row = await api.pools.run(projectId, caller, requestSettingsOf(request.method, apiPath(url, q, rpc), request.headers), statement, readOnly, checkedBeforeCommit(plan) ? (r) => checkBeforeCommit(plan, r) : undefined);
  timer.mark('execute');
  const answer = respond(plan, row);
  timer.mark('respond');
  sendProfile(reply, schema, exposed);
  void reply.status(answer.status).headers(answer.headers).header('server-timing', timer.toString());
  return answer.body === null ? reply.send() : reply.send(answer.body);
}

/** Registers the data API routes on `scope` (one prefix). */
export function bindDataApi(scope: FastifyInstance, api: DataApi): void {
  void scope.register(async (rest) => {
    // The body goes to PostgreSQL as the text that came: read it as a string, parse it once in parse.ts.
    rest.removeAllContentTypeParsers();
    rest.addContentTypeParser('*', { parseAs: 'string' }, (_request, text, done) => done(null, text));
    rest.route({ method: ['GET', 'POST'], url: '/rpc/:fn', handler: (request, reply) => handle(api, request, reply, true) });
    rest.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/:table', handler: (request, reply) => handle(api, request, reply, false) });
  });
}

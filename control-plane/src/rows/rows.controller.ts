/**
 * `/api/projects/:id/tables/:name/rows`: read, insert, update and delete rows
 * as the project's owner role. Rows are data, not schema: nothing here is a
 * command or records an event. Each handler: resolve, authorise, act, respond.
 */
import { Body, Controller, Delete, Get, Inject, Param, Post, Put, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PoolClient } from 'pg';
import { DeleteRowBody, InsertRowBody, ListRowsQuery, RowsPathParams, UpdateRowBody, notFound } from '@baseplane/contracts';
import { CallerResolver } from '../http/caller';
import { isDatabaseError, toApiError } from '../http/database-error';
import { validate } from '../http/validate';
import { readCatalog, type TableInfo } from '../tenants/catalog';
import { TenantConnections } from '../tenants/tenant-connections';
import { parseExactJson } from './exact-json';
import { parseRowsQuery } from './rows-parse';
import { countRowsSql, deleteRowSql, insertRowSql, selectRowsSql, updateRowSql, type Statement } from './rows-sql';

/**
 * A row as PostgreSQL wrote its JSON, passed on as that text: parsed in
 * JavaScript, an int8 past 2^53 or a numeric's digits and scale would not
 * survive (PostgREST too answers the database's own JSON text).
 */
type RowJson = string;
const AS_TEXT = { getTypeParser: () => (text: string) => text };

/** The answer is JSON text already; Fastify sends a string under a JSON content type as it is. */
const json = (reply: FastifyReply, text: string) => {
  void reply.header('content-type', 'application/json; charset=utf-8');
  return text;
};

/** Management reads are bounded like the SQL console's. */
const STATEMENT_TIMEOUT = '60s';

@Controller('api/projects/:id/tables/:name/rows')
export class RowsController {
  constructor(
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
  ) {}

  @Get()
  async list(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param() params: unknown, @Query() query: unknown): Promise<string> {
    const { id, name } = await this.authorise(request, params);
    const selection = parseRowsQuery(validate(ListRowsQuery, query, 'query'));
    const page = await this.inTable(id, name, async (client, table) => {
      const select = selectRowsSql(table, selection);
      const count = countRowsSql(table, selection.filters);
      const rows = await client.query<{ row: RowJson }>({ ...select, types: AS_TEXT });
      const counted = await client.query<{ total: string }>(count.text, count.values);
      return `{"rows":[${rows.rows.map((r) => r.row).join(',')}],"total":${Number(counted.rows[0]!.total)}}`;
    });
    return json(reply, page);
  }

  @Post()
  async insert(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param() params: unknown, @Body() body: unknown): Promise<string> {
    const { id, name } = await this.authorise(request, params);
    const { data } = validate(InsertRowBody, exactBody(request, body));
    return json(reply, await this.inTable(id, name, (client, table) => oneRow(client, insertRowSql(table, data))));
  }

  @Put()
  async update(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param() params: unknown, @Body() body: unknown): Promise<string> {
    const { id, name } = await this.authorise(request, params);
    const { pkWhere, data } = validate(UpdateRowBody, exactBody(request, body));
    return json(reply, await this.inTable(id, name, (client, table) => oneRow(client, updateRowSql(table, pkWhere, data))));
  }

  @Delete()
  async remove(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param() params: unknown, @Body() body: unknown): Promise<string> {
    const { id, name } = await this.authorise(request, params);
    const { pkWhere } = validate(DeleteRowBody, exactBody(request, body));
    return json(reply, await this.inTable(id, name, (client, table) => oneRow(client, deleteRowSql(table, pkWhere))));
  }

  private async authorise(request: FastifyRequest, params: unknown) {
    const path = validate(RowsPathParams, params, 'path');
    await this.callers.forActiveProject(request, path.id);
    return path;
  }

  /**
   * Runs `work` in one owner transaction on the table as the catalog has it
   * now (404 when there is none); database errors map as PostgREST maps them.
   */
  private async inTable<T>(projectId: string, name: string, work: (client: PoolClient, table: TableInfo) => Promise<T>): Promise<T> {
    try {
      return await this.tenants.transaction(projectId, async (client) => {
        // UTC so timestamptz values come back as the API's UTC ISO strings.
        await client.query(`set local time zone 'UTC'`);
        await client.query(`set local statement_timeout = '${STATEMENT_TIMEOUT}'`);
        const [table] = await readCatalog(client, name);
        if (!table) throw notFound(`table "${name}"`);
        return work(client, table);
      });
    } catch (error) {
      // 42883 here is an operator the column's type lacks (ordering json, …): the request's fault.
      throw toApiError(error, isDatabaseError(error) && error.code === '42883' ? 400 : undefined);
    }
  }
}

/**
 * The body with its numbers as written (exact-json.ts), read again from the
 * text Fastify parsed (`rawBody`, main.ts): JSON.parse's numbers would change
 * an int8 past 2^53 or a numeric's digits. That text already passed Fastify's
 * parser, prototype-poisoning checks included.
 */
function exactBody(request: FastifyRequest, parsed: unknown): unknown {
  const raw = (request as FastifyRequest & { rawBody?: Buffer }).rawBody;
  // A form body has its raw text kept too: only JSON is read again.
  if (raw === undefined || !/^application\/json\b/i.test(request.headers['content-type'] ?? '')) return parsed;
  const text = raw.toString('utf8');
  try {
    return parseExactJson(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    // Text Fastify took that JSON.parse does not: what Fastify made of it stands.
    return parsed;
  }
}

/** The one row a mutation answers, or 404 when its primary key matched none. */
async function oneRow(client: PoolClient, statement: Statement): Promise<RowJson> {
  const { rows } = await client.query<{ row: RowJson }>({ ...statement, types: AS_TEXT });
  if (!rows[0]) throw notFound('row');
  return rows[0].row;
}

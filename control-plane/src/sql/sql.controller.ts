/**
 * `POST /api/sql/execute`: the SQL console (API.md → SQL), for a member of the
 * project's team or its service key. Resolve, authorise, act, respond.
 */
import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ExecuteSqlBody } from '@baseplane/contracts';
import { CallerResolver } from '../http/caller';
import { validate } from '../http/validate';
import { actorOf } from '../projects/command-runner';
import { stringifyExactJson } from '../rows/exact-json';
import { SqlConsole } from './sql-console';

@Controller('api/sql')
export class SqlController {
  constructor(
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(SqlConsole) private readonly sqlConsole: SqlConsole,
  ) {}

  @Post('execute')
  @HttpCode(200)
  async execute(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Body() body: unknown): Promise<string> {
    const { projectId, query } = validate(ExecuteSqlBody, body);
    const { caller } = await this.callers.forActiveProject(request, projectId);
    const result = await this.sqlConsole.execute(projectId, query, actorOf(caller));
    // Serialised here, without recursion, with json values as PostgreSQL wrote them (last-result-query.ts):
    // Fastify's JSON.stringify would throw on a deep one, after the query committed. A string is sent as it is.
    void reply.header('content-type', 'application/json; charset=utf-8');
    return stringifyExactJson(result);
  }
}

/**
 * `POST /api/sql/execute`: the SQL console (API.md → SQL), for a member of the
 * project's team or its service key. Resolve, authorise, act, respond.
 */
import { Body, Controller, HttpCode, Inject, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ExecuteSqlBody, type SqlResult } from '@baseplane/contracts';
import { CallerResolver } from '../http/caller';
import { validate } from '../http/validate';
import { actorOf } from '../projects/command-runner';
import { SqlConsole } from './sql-console';

@Controller('api/sql')
export class SqlController {
  constructor(
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(SqlConsole) private readonly sqlConsole: SqlConsole,
  ) {}

  @Post('execute')
  @HttpCode(200)
  async execute(@Req() request: FastifyRequest, @Body() body: unknown): Promise<SqlResult> {
    const { projectId, query } = validate(ExecuteSqlBody, body);
    const { caller } = await this.callers.forActiveProject(request, projectId);
    return this.sqlConsole.execute(projectId, query, actorOf(caller));
  }
}

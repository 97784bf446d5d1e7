/**
 * `/api/projects`: create, list, get, delete, keys, history and operations.
 * Each handler: resolve the caller, authorise, act, respond.
 */
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CreateProjectBody, EventsQuery, IdParam, ListProjectsQuery, RotateKeyBody, notFound } from '@baseplane/contracts';
import { validate } from '../http/validate';
import { CallerResolver, withoutApiKey } from '../http/caller';
import { AccountsService } from '../accounts/accounts.service';
import { ProjectsService } from './projects.service';
import type { CommandContext } from '../domain/handle-command';
import type { CommandOutcome, CommandRunner } from './command-runner';

/** A rotation answers both keys, so it is for team members only, as the keys are shown. */
const KEYS_FOR_MEMBERS = 'keys are shown to team members only';

export const wantsAsync = (request: FastifyRequest) => /\brespond-async\b/i.test(String(request.headers.prefer ?? ''));

/** Done ⇒ the resource with `status`; still running ⇒ 202 with the operation to follow. */
export async function answerCommand<T>(reply: FastifyReply, outcome: CommandOutcome, status: number, resource: () => Promise<T>) {
  if (outcome.done) {
    void reply.status(status);
    return resource();
  }
  void reply.status(202).header('location', `/api/projects/${outcome.projectId}/operations/${outcome.operationId}`);
  return {
    operation: outcome.operation ?? { id: outcome.operationId, status: 'pending', command: null, workflowId: null, startedAt: null, finishedAt: null, error: null },
  };
}

/**
 * Runs a tenant command for the request's caller (without waiting when it asks
 * `Prefer: respond-async`) and answers it as {@link answerCommand} does. When
 * the command recorded nothing because the change is already under way,
 * `underWay` names that change's operation, and the caller follows it.
 */
export async function runAndAnswer<T>(
  parts: { callers: CallerResolver; runner: CommandRunner },
  request: FastifyRequest,
  reply: FastifyReply,
  projectId: string,
  execute: (context: CommandContext) => Promise<{ events: unknown[] }>,
  status: number,
  resource: () => Promise<T>,
  underWay?: () => Promise<string | undefined>,
) {
  const caller = await parts.callers.resolve(request);
  const async = wantsAsync(request);
  let outcome = await parts.runner.run(projectId, caller, async, execute);
  if (underWay && outcome.done && !outcome.operation) {
    const operationId = await underWay();
    if (operationId) outcome = await parts.runner.follow(projectId, operationId, async);
  }
  return answerCommand(reply, outcome, status, resource);
}

@Controller('api/projects')
export class ProjectsController {
  constructor(
    @Inject(ProjectsService) private readonly projects: ProjectsService,
    @Inject(AccountsService) private readonly accounts: AccountsService,
    @Inject(CallerResolver) private readonly callers: CallerResolver,
  ) {}

  @Post()
  async create(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Body() body: unknown) {
    const caller = await this.callers.operator(request);
    const { name, teamId } = validate(CreateProjectBody, body);
    const teams = await this.accounts.teamsOf(caller.accountId);
    const team = teamId ? teams.find((t) => t.id === teamId) : (teams.find((t) => t.role === 'owner') ?? teams[0]);
    if (!team) throw notFound('team');
    const { outcome, projectId } = await this.projects.create(caller, name, team.id, wantsAsync(request));
    return this.answer(reply, outcome, 201, () => this.projects.get(projectId, true));
  }

  @Get()
  async list(@Req() request: FastifyRequest, @Query() query: unknown) {
    const caller = await this.callers.operator(request);
    return this.projects.list(caller.accountId, validate(ListProjectsQuery, query, 'query').teamId);
  }

  @Get(':id')
  async get(@Req() request: FastifyRequest, @Param() params: unknown) {
    const { id } = validate(IdParam, params, 'path');
    const { caller } = await this.callers.forProject(request, id);
    return this.projects.get(id, caller.kind === 'operator');
  }

  @Delete(':id')
  async remove(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param() params: unknown) {
    const { id } = validate(IdParam, params, 'path');
    const caller = await this.callers.operatorOf(request, id);
    const outcome = await this.projects.delete(caller, id, wantsAsync(request));
    return this.answer(reply, outcome, 200, () => this.projects.get(id, false));
  }

  @Get(':id/keys')
  async keys(@Req() request: FastifyRequest, @Param() params: unknown) {
    const { id } = validate(IdParam, params, 'path');
    await this.callers.operatorOf(request, id, KEYS_FOR_MEMBERS);
    return this.projects.keys(id);
  }

  @Post(':id/keys/rotate')
  @HttpCode(200)
  async rotate(@Req() request: FastifyRequest, @Param() params: unknown, @Body() body: unknown) {
    const { id } = validate(IdParam, params, 'path');
    const caller = await this.callers.operatorOf(request, id, KEYS_FOR_MEMBERS);
    return this.projects.rotateKey(caller, id, validate(RotateKeyBody, body).kind);
  }

  /** A command that changes nothing but travels the whole apply path: a probe of the pipeline. */
  @Post(':id/ping')
  async ping(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param() params: unknown) {
    const { id } = validate(IdParam, params, 'path');
    const { caller } = await this.callers.forProject(request, id);
    const outcome = await this.projects.run({ type: 'PingProject', data: { projectId: id } }, caller, wantsAsync(request));
    return this.answer(reply, outcome, 200, async () => ({ operation: outcome.operation }));
  }

  @Get(':id/events')
  async events(@Req() request: FastifyRequest, @Param() params: unknown, @Query() query: unknown) {
    const { id } = validate(IdParam, params, 'path');
    await this.callers.forProject(request, id);
    const { after, limit } = validate(EventsQuery, withoutApiKey(query), 'query');
    return this.projects.events(id, Number(after ?? 0), Math.min(Number(limit ?? 100), 1000));
  }

  @Get(':id/operations')
  async operations(@Req() request: FastifyRequest, @Param() params: unknown) {
    const { id } = validate(IdParam, params, 'path');
    await this.callers.forProject(request, id);
    return this.projects.operations(id);
  }

  @Get(':id/operations/:opId')
  async operation(@Req() request: FastifyRequest, @Param('id') rawId: string, @Param('opId') rawOpId: string) {
    const { id } = validate(IdParam, { id: rawId }, 'path');
    const { id: opId } = validate(IdParam, { id: rawOpId }, 'path');
    await this.callers.forProject(request, id);
    return this.projects.operation(id, opId);
  }

  private answer<T>(reply: FastifyReply, outcome: CommandOutcome, status: number, resource: () => Promise<T>) {
    return answerCommand(reply, outcome, status, resource);
  }
}

/**
 * `/api/projects/:id/rest/settings`: a project's data API settings (which
 * schemas `/rest/v1` serves, its row cap). A change is the `UpdateRestSettings` command on
 * the project's stream, followed by the data plane's directory as the auth
 * settings are. Nothing in the tenant changes, so no workflow applies it: the
 * answer comes once the event is recorded and projected.
 */
import { Body, Controller, Get, Inject, Param, Patch, Req, forwardRef } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import { DEFAULT_REST_SETTINGS, IdParam, UpdateRestSettingsBody, checkRestSettings, notFound, type RestSettings } from '@baseplane/contracts';
import { PG_POOL } from '../app.module';
import { CallerResolver } from '../http/caller';
import { validate } from '../http/validate';
import { CommandRunner } from '../projects/command-runner';
import { ExecuteProjectCommand } from '../projects/project-command';

@Controller('api/projects/:id/rest/settings')
export class RestSettingsController {
  constructor(
    // forwardRef: app.module.ts imports this file, so PG_POOL is read when Nest injects, not at load.
    @Inject(forwardRef(() => PG_POOL)) private readonly db: Pool,
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(CommandBus) private readonly commands: CommandBus,
    @Inject(CommandRunner) private readonly runner: CommandRunner,
  ) {}

  @Get()
  async get(@Req() request: FastifyRequest, @Param() params: unknown): Promise<RestSettings> {
    const { id } = validate(IdParam, params, 'path');
    await this.callers.forProject(request, id);
    return this.read(id);
  }

  @Patch()
  async update(@Req() request: FastifyRequest, @Param() params: unknown, @Body() body: unknown): Promise<RestSettings> {
    const { id } = validate(IdParam, params, 'path');
    const { caller } = await this.callers.forProject(request, id);
    const changes = validate(UpdateRestSettingsBody, body);
    checkRestSettings(changes);
    // No workflow applies it: its operation is done once the projector has recorded it, which is what the runner waits for.
    await this.runner.run(id, caller, false, (context) =>
      this.commands.execute(new ExecuteProjectCommand({ type: 'UpdateRestSettings', data: { projectId: id, changes } }, context)),
    );
    return this.read(id);
  }

  private async read(projectId: string): Promise<RestSettings> {
    const { rows } = await this.db.query<{ rest_settings: Partial<RestSettings> }>('select rest_settings from projects where id = $1', [projectId]);
    if (!rows[0]) throw notFound('project');
    return { ...DEFAULT_REST_SETTINGS, ...rows[0].rest_settings };
  }
}

/**
 * `/api/projects/:id/auth/settings`: a project's auth settings. A change is
 * the `UpdateAuthSettings` command on the project's stream; the data plane's
 * directory follows the stream, so every replica has it within a second.
 * Nothing in the tenant changes, so no workflow applies it: the answer comes
 * once the event is recorded and projected.
 */
import { Body, Controller, Get, Inject, Param, Patch, Req, forwardRef } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import {
  DEFAULT_AUTH_SETTINGS,
  IdParam,
  UpdateAuthSettingsBody,
  checkAuthSettingsUrls,
  notFound,
  redact,
  type AuthSettings,
  type StoredAuthSettings,
} from '@baseplane/contracts';
import { PG_POOL } from '../app.module';
import { PlatformSecrets } from '../accounts/secrets';
import { CallerResolver } from '../http/caller';
import { validate } from '../http/validate';
import { CommandRunner } from '../projects/command-runner';
import { ExecuteProjectCommand } from '../projects/project-command';

@Controller('api/projects/:id/auth/settings')
export class AuthSettingsController {
  constructor(
    // forwardRef: app.module.ts imports this file, so PG_POOL is read when Nest injects, not at load.
    @Inject(forwardRef(() => PG_POOL)) private readonly db: Pool,
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(CommandBus) private readonly commands: CommandBus,
    @Inject(CommandRunner) private readonly runner: CommandRunner,
    @Inject(PlatformSecrets) private readonly secrets: PlatformSecrets,
  ) {}

  @Get()
  async get(@Req() request: FastifyRequest, @Param() params: unknown): Promise<AuthSettings> {
    const { id } = validate(IdParam, params, 'path');
    await this.callers.forProject(request, id);
    return this.read(id);
  }

  @Patch()
  async update(@Req() request: FastifyRequest, @Param() params: unknown, @Body() body: unknown): Promise<AuthSettings> {
    const { id } = validate(IdParam, params, 'path');
    const { caller } = await this.callers.forProject(request, id);
    const update = validate(UpdateAuthSettingsBody, body);
    checkAuthSettingsUrls(update);
    const { smtp, ...rest } = update;
    const changes: Partial<StoredAuthSettings> = { ...rest };
    // The SMTP URL carries credentials: it travels and is stored sealed.
    if (smtp !== undefined) changes.smtp = smtp === null ? null : { urlCipher: this.secrets.encrypt(smtp.url), from: smtp.from };
    // No workflow applies it: its operation is done once the projector has recorded it, which is what the runner waits for.
    await this.runner.run(id, caller, false, (context) =>
      this.commands.execute(new ExecuteProjectCommand({ type: 'UpdateAuthSettings', data: { projectId: id, changes } }, context)),
    );
    return this.read(id);
  }

  private async read(projectId: string): Promise<AuthSettings> {
    const { rows } = await this.db.query<{ auth_settings: Partial<StoredAuthSettings> }>('select auth_settings from projects where id = $1', [projectId]);
    if (!rows[0]) throw notFound('project');
    const { smtp, ...settings } = { ...DEFAULT_AUTH_SETTINGS, ...rows[0].auth_settings };
    return { ...settings, smtp: smtp === null ? null : { url: redact(this.secrets.decrypt(smtp.urlCipher)), from: smtp.from } };
  }
}

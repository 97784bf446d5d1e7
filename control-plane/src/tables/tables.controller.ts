/**
 * `/api/projects/:id/tables`: tables, columns and foreign keys. Reads answer
 * from the tenant's live catalog; changes are commands (decided, recorded,
 * applied by the project's workflow) answered once applied.
 */
import { Body, Controller, Delete, Get, Inject, Param, Post, Put, Req, Res } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  AddColumnBody,
  AddForeignKeyBody,
  CreateTableBody,
  UpdateColumnBody,
  notFound,
  toColumnSpec,
  type ColumnChange,
  type SchemaCommand,
} from '@baseplane/contracts';
import type { CommandContext } from '../domain/handle-command';
import { validate } from '../http/validate';
import { CallerResolver } from '../http/caller';
import { CommandRunner } from '../projects/command-runner';
import { runAndAnswer } from '../projects/projects.controller';
import { readCatalog, type TableInfo } from '../tenants/catalog';
import { TenantConnections } from '../tenants/tenant-connections';
import { ExecuteSchemaCommand, type HandledSchemaCommand } from './schema-command';

@Controller('api/projects/:id/tables')
export class TablesController {
  constructor(
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
    @Inject(CommandRunner) private readonly runner: CommandRunner,
    @Inject(CommandBus) private readonly commands: CommandBus,
  ) {}

  @Get()
  async list(@Req() request: FastifyRequest, @Param('id') id: string) {
    const projectId = await this.callers.activeProjectId(request, id);
    return this.catalog(projectId);
  }

  @Post()
  async create(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Body() body: unknown) {
    const projectId = await this.callers.activeProjectId(request, id);
    const input = validate(CreateTableBody, body);
    const columns = input.columns.map(toColumnSpec);
    return this.send(request, reply, 201, { type: 'CreateTable', data: { projectId, name: input.name, columns, access: input.access ?? 'public-read' } }, () =>
      this.table(projectId, input.name),
    );
  }

  @Delete(':name')
  async drop(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Param('name') name: string) {
    const projectId = await this.callers.activeProjectId(request, id);
    return this.send(request, reply, 200, { type: 'DropTable', data: { projectId, name } }, async () => ({ name, dropped: true }));
  }

  @Get(':name/columns')
  async columns(@Req() request: FastifyRequest, @Param('id') id: string, @Param('name') name: string) {
    const projectId = await this.callers.activeProjectId(request, id);
    return (await this.table(projectId, name)).columns;
  }

  @Post(':name/columns')
  async addColumn(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const projectId = await this.callers.activeProjectId(request, id);
    const column = toColumnSpec(validate(AddColumnBody, body));
    return this.send(request, reply, 201, { type: 'AddColumn', data: { projectId, table: name, column } }, () => this.column(projectId, name, column.name));
  }

  @Put(':name/columns/:col')
  async updateColumn(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Param('id') id: string,
    @Param('name') name: string,
    @Param('col') col: string,
    @Body() body: unknown,
  ) {
    const projectId = await this.callers.activeProjectId(request, id);
    const input = validate(UpdateColumnBody, body);
    const change: ColumnChange = {};
    if (input.name !== undefined) change.name = input.name;
    if (input.type !== undefined) change.type = input.type;
    if (input.using !== undefined) change.using = input.using;
    if (input.nullable !== undefined) change.nullable = input.nullable;
    if (input.default !== undefined) change.default = input.default === null ? null : String(input.default);
    return this.send(request, reply, 200, { type: 'UpdateColumn', data: { projectId, table: name, column: col, change } }, () =>
      this.column(projectId, name, change.name ?? col),
    );
  }

  @Delete(':name/columns/:col')
  async dropColumn(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Param('name') name: string, @Param('col') col: string) {
    const projectId = await this.callers.activeProjectId(request, id);
    return this.send(request, reply, 200, { type: 'DropColumn', data: { projectId, table: name, column: col } }, async () => ({ name: col, dropped: true }));
  }

  @Get(':name/foreign-keys')
  async foreignKeys(@Req() request: FastifyRequest, @Param('id') id: string, @Param('name') name: string) {
    const projectId = await this.callers.activeProjectId(request, id);
    return (await this.table(projectId, name)).foreignKeys;
  }

  @Post(':name/foreign-keys')
  async addForeignKey(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const projectId = await this.callers.activeProjectId(request, id);
    const input = validate(AddForeignKeyBody, body);
    const command: SchemaCommand = { type: 'AddForeignKey', data: { projectId, table: name, foreignKey: input } };
    return this.send(request, reply, 201, command, async (recorded) => {
      // The decider named the key when the request did not: other keys may be on the same columns.
      const added = recorded.find((event) => event.type === 'ForeignKeyAdded')?.data.foreignKey.name;
      const foreignKey = (await this.table(projectId, name)).foreignKeys.find((fk) => fk.name === added);
      if (!foreignKey) throw notFound(`foreign key "${added ?? input.name ?? ''}"`);
      return foreignKey;
    });
  }

  @Delete(':name/foreign-keys/:fk')
  async dropForeignKey(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Param('name') name: string, @Param('fk') fk: string) {
    const projectId = await this.callers.activeProjectId(request, id);
    return this.send(request, reply, 200, { type: 'DropForeignKey', data: { projectId, table: name, name: fk } }, async () => ({ name: fk, dropped: true }));
  }

  /** Runs the command and answers `resource`, which is given the events the command recorded. */
  private send<T>(request: FastifyRequest, reply: FastifyReply, status: number, command: SchemaCommand, resource: (recorded: HandledSchemaCommand['events']) => Promise<T>) {
    let recorded: HandledSchemaCommand['events'] = [];
    const execute = async (context: CommandContext) => {
      const handled = await this.commands.execute<ExecuteSchemaCommand, HandledSchemaCommand>(new ExecuteSchemaCommand(command, context));
      recorded = handled.events;
      return handled;
    };
    return runAndAnswer({ callers: this.callers, runner: this.runner }, request, reply, command.data.projectId, execute, status, () => resource(recorded));
  }

  private catalog(projectId: string): Promise<TableInfo[]> {
    return this.tenants.transaction(projectId, (client) => readCatalog(client));
  }

  private async table(projectId: string, name: string): Promise<TableInfo> {
    // No PostgreSQL name holds NUL, and the catalog query would fail on one (22021) instead of finding nothing.
    if (name.includes('\u0000')) throw notFound(`table "${name.replaceAll('\u0000', '\\u0000')}"`);
    const [table] = await this.tenants.transaction(projectId, (client) => readCatalog(client, name));
    if (!table) throw notFound(`table "${name}"`);
    return table;
  }

  private async column(projectId: string, table: string, name: string) {
    const column = (await this.table(projectId, table)).columns.find((c) => c.name === name);
    if (!column) throw notFound(`column "${name}"`);
    return column;
  }
}

/**
 * `/api/projects/:id/storage/buckets`: list, create, toggle public, delete.
 * Reads answer from the tenant's live `storage.buckets`; changes are commands
 * (decided, recorded, applied by the project's workflow to the tenant and the
 * object store) answered once applied; a DELETE of a bucket whose deletion is
 * under way follows that deletion. Each handler: resolve and authorise
 * the caller, validate, act, respond.
 */
import { Body, Controller, Delete, Get, Inject, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  BucketNameParam,
  CreateBucketBody,
  DeleteBucketQuery,
  UpdateBucketBody,
  notFound,
  projectStreamId,
  toBucketSpec,
  type Bucket,
  type BucketCommand,
} from '@baseplane/contracts';
import type { CommandContext } from '../domain/handle-command';
import { EventStore } from '../event-store/event-store';
import { validate } from '../http/validate';
import { CallerResolver } from '../http/caller';
import { CommandRunner } from '../projects/command-runner';
import { runAndAnswer } from '../projects/projects.controller';
import { readBuckets } from '../tenants/storage-buckets';
import { TenantConnections } from '../tenants/tenant-connections';
import { ExecuteBucketCommand } from './bucket-command';

@Controller('api/projects/:id/storage/buckets')
export class BucketsController {
  constructor(
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
    @Inject(CommandRunner) private readonly runner: CommandRunner,
    @Inject(CommandBus) private readonly commands: CommandBus,
    @Inject(EventStore) private readonly store: EventStore,
  ) {}

  @Get()
  async list(@Req() request: FastifyRequest, @Param('id') id: string): Promise<Bucket[]> {
    const projectId = await this.callers.activeProjectId(request, id);
    return this.tenants.transaction(projectId, (client) => readBuckets(client));
  }

  @Post()
  async create(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Body() body: unknown) {
    const projectId = await this.callers.activeProjectId(request, id);
    const bucket = toBucketSpec(validate(CreateBucketBody, body));
    return this.send(request, reply, 201, { type: 'CreateBucket', data: { projectId, bucket } }, () => this.bucket(projectId, bucket.name));
  }

  @Patch(':name')
  async update(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Param('name') rawName: string, @Body() body: unknown) {
    const projectId = await this.callers.activeProjectId(request, id);
    const { name } = validate(BucketNameParam, { name: rawName }, 'path');
    const input = validate(UpdateBucketBody, body);
    return this.send(request, reply, 200, { type: 'UpdateBucket', data: { projectId, name, public: input.public } }, () => this.bucket(projectId, name));
  }

  @Delete(':name')
  async remove(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Param('id') id: string, @Param('name') rawName: string, @Query() query: unknown) {
    const projectId = await this.callers.activeProjectId(request, id);
    const { name } = validate(BucketNameParam, { name: rawName }, 'path');
    // Only `force` is ours; `apikey` may ride along in the query (API.md → Conventions).
    const { force } = validate(DeleteBucketQuery, { force: (query as Record<string, unknown> | undefined)?.force }, 'query');
    // A bucket already being deleted records nothing again: the caller follows the deletion under way, as a repeated project DELETE does.
    const underWay = async () => (await this.store.lastOfType(projectStreamId(projectId), 'BucketDeletionRequested', { name }))?.metadata.correlationId;
    return this.send(request, reply, 200, { type: 'DeleteBucket', data: { projectId, name, force: force === 'true' } }, async () => ({ name, deleted: true }), underWay);
  }

  private send<T>(request: FastifyRequest, reply: FastifyReply, status: number, command: BucketCommand, resource: () => Promise<T>, underWay?: () => Promise<string | undefined>) {
    const execute = (context: CommandContext) => this.commands.execute(new ExecuteBucketCommand(command, context));
    return runAndAnswer({ callers: this.callers, runner: this.runner }, request, reply, command.data.projectId, execute, status, resource, underWay);
  }

  private async bucket(projectId: string, name: string): Promise<Bucket> {
    const [bucket] = await this.tenants.transaction(projectId, (client) => readBuckets(client, name));
    if (!bucket) throw notFound(`bucket "${name}"`);
    return bucket;
  }
}

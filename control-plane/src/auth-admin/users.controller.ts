/**
 * `/api/projects/:id/auth/users`: the operators' view of a project's end
 * users — list with search and paging, add, update, delete. Users are data in
 * the tenant's `auth` schema, not events; the same SQL as the data plane's
 * auth API (contracts/user-directory), run as the project's owner role.
 */
import { Body, Controller, Delete, Get, Inject, Param, Patch, Post, Query, Req, forwardRef } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import argon2 from 'argon2';
import type { Pool } from 'pg';
import {
  ApiError,
  CreateEndUserBody,
  DEFAULT_AUTH_SETTINGS,
  checkEmailAddress,
  IdParam,
  ListEndUsersQuery,
  UpdateEndUserBody,
  invalidRequest,
  notFound,
  type EndUser,
} from '@baseplane/contracts';
import * as store from '@baseplane/contracts/user-directory';
import { PG_POOL } from '../app.module';
import { ARGON2_OPTIONS } from '../accounts/accounts.service';
import { CallerResolver, withoutApiKey } from '../http/caller';
import { validate } from '../http/validate';
import { TenantConnections } from '../tenants/tenant-connections';

const DEFAULT_PAGE = 50;
const MAX_PAGE = 1000;

function checkEmail(email: string | undefined): void {
  if (email !== undefined) checkEmailAddress(email);
}

@Controller('api/projects/:id/auth/users')
export class UsersController {
  constructor(
    // forwardRef: app.module.ts imports this file, so PG_POOL is read when Nest injects, not at load.
    @Inject(forwardRef(() => PG_POOL)) private readonly db: Pool,
    @Inject(CallerResolver) private readonly callers: CallerResolver,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
  ) {}

  @Get()
  async list(@Req() request: FastifyRequest, @Param('id') rawId: string, @Query() query: unknown): Promise<{ users: EndUser[]; total: number }> {
    const id = await this.callers.activeProjectId(request, rawId);
    const { search, limit, offset } = validate(ListEndUsersQuery, withoutApiKey(query), 'query');
    const page = await this.tenants.transaction(id, (tx) =>
      store.listUsers(tx, search?.trim() || undefined, Math.min(Number(limit ?? DEFAULT_PAGE), MAX_PAGE), Number(offset ?? 0)),
    );
    return { users: page.users.map(store.publicUser), total: page.total };
  }

  @Post()
  async create(@Req() request: FastifyRequest, @Param('id') rawId: string, @Body() body: unknown): Promise<EndUser> {
    const id = await this.callers.activeProjectId(request, rawId);
    const { password, ...input } = validate(CreateEndUserBody, body);
    checkEmail(input.email);
    const passwordHash = password === undefined ? null : await this.hash(id, password);
    // An existing email, in any case, is 409 user_already_exists (the specification's dashboard rule).
    return store.publicUser(await this.tenants.transaction(id, (tx) => store.createUser(tx, { ...input, passwordHash })));
  }

  @Patch(':userId')
  async update(@Req() request: FastifyRequest, @Param('id') rawId: string, @Param('userId') rawUserId: string, @Body() body: unknown): Promise<EndUser> {
    const id = await this.callers.activeProjectId(request, rawId);
    const userId = validate(IdParam, { id: rawUserId }, 'path').id;
    const { password, ...change } = validate(UpdateEndUserBody, body);
    checkEmail(change.email);
    const passwordHash = password === undefined ? undefined : await this.hash(id, password);
    const user = await this.tenants.transaction(id, async (tx) => {
      const user = await store.updateUser(tx, userId, change);
      if (user && passwordHash !== undefined) {
        await store.setPassword(tx, userId, passwordHash);
        // A password set by an operator replaces whatever the user's sessions were signed in with.
        await store.revokeAllSessions(tx, userId);
      }
      return user;
    });
    if (!user) throw notFound('user');
    return store.publicUser(user);
  }

  @Delete(':userId')
  async remove(@Req() request: FastifyRequest, @Param('id') rawId: string, @Param('userId') rawUserId: string): Promise<EndUser> {
    const id = await this.callers.activeProjectId(request, rawId);
    const userId = validate(IdParam, { id: rawUserId }, 'path').id;
    const user = await this.tenants.transaction(id, (tx) => store.deleteUser(tx, userId));
    if (!user) throw notFound('user');
    return store.publicUser(user);
  }

  /** Hashes a password an operator sets, once it is as long as the project asks. */
  private async hash(projectId: string, password: string): Promise<string> {
    const { rows } = await this.db.query<{ min: number | null }>(`select (auth_settings ->> 'passwordMinLength')::int as min from projects where id = $1`, [projectId]);
    const min = rows[0]?.min ?? DEFAULT_AUTH_SETTINGS.passwordMinLength;
    if (password.length < min) throw new ApiError(400, 'weak_password', `password must have at least ${min} characters`);
    return argon2.hash(password, ARGON2_OPTIONS);
  }

}

/**
 * `/api/auth/*` and `/api/teams`: operator sign-up, login, refresh, me, teams.
 */
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AddMemberBody, CreateTeamBody, IdParam, PlatformLoginBody, PlatformSignupBody, RefreshBody, checkEmailAddress, checkOperatorCredentials } from '@baseplane/contracts';
import { validate } from '../http/validate';
import { CallerResolver } from '../http/caller';
import { AccountsService } from './accounts.service';
import { PlatformTokenService } from './platform-tokens';

@Controller('api')
export class AccountsController {
  constructor(
    @Inject(AccountsService) private readonly accounts: AccountsService,
    @Inject(PlatformTokenService) private readonly tokens: PlatformTokenService,
    @Inject(CallerResolver) private readonly callers: CallerResolver,
  ) {}

  @Post('auth/signup')
  @HttpCode(201)
  signup(@Req() request: FastifyRequest, @Body() body: unknown) {
    const { email, password, name } = validate(PlatformSignupBody, body);
    checkOperatorCredentials(email, password);
    return this.accounts.signup(email, password, name, request.ip);
  }

  @Post('auth/login')
  @HttpCode(200)
  login(@Req() request: FastifyRequest, @Body() body: unknown) {
    const { email, password } = validate(PlatformLoginBody, body);
    return this.accounts.login(email, password, request.ip);
  }

  @Post('auth/refresh')
  @HttpCode(200)
  refresh(@Body() body: unknown) {
    return this.tokens.refresh(validate(RefreshBody, body).refreshToken);
  }

  @Get('auth/me')
  async me(@Req() request: FastifyRequest) {
    const caller = await this.callers.operator(request);
    return this.accounts.me(caller.accountId);
  }

  @Get('teams')
  async teams(@Req() request: FastifyRequest) {
    const caller = await this.callers.operator(request);
    return this.accounts.teamsOf(caller.accountId);
  }

  @Post('teams')
  @HttpCode(201)
  async createTeam(@Req() request: FastifyRequest, @Body() body: unknown) {
    const caller = await this.callers.operator(request);
    return this.accounts.createTeam(caller.accountId, validate(CreateTeamBody, body).name);
  }

  @Post('teams/:teamId/members')
  @HttpCode(201)
  async addMember(@Req() request: FastifyRequest, @Param('teamId') teamId: string, @Body() body: unknown) {
    const caller = await this.callers.operator(request);
    const { id } = validate(IdParam, { id: teamId }, 'path');
    const { email, role } = validate(AddMemberBody, body);
    return this.accounts.addMember(caller.accountId, id, checkEmailAddress(email), role ?? 'member');
  }
}

/**
 * `GET /api/dev/inbox?to=`: the messages the local stack's built-in SMTP
 * server received (API.md → End-user auth, Dev inbox): to an operator, the
 * messages sent for the projects of their teams (the project the data plane
 * named in the message), so one team does not read another's end users' codes.
 * Only when the supervisor runs that inbox (DEV_INBOX=1); otherwise the route is 404.
 */
import { Controller, Get, Inject, Query, Req, forwardRef } from '@nestjs/common';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import { notFound, type DevInboxMessage } from '@baseplane/contracts';
import { PG_POOL } from '../app.module';
import { CallerResolver } from '../http/caller';
import { validate } from '../http/validate';

const DevInboxQuery = Type.Object({ to: Type.Optional(Type.String({ maxLength: 320 })) }, { additionalProperties: false });

/** The newest messages are enough to find a code; an old inbox is not sent whole. */
const MAX_MESSAGES = 100;

@Controller('api/dev/inbox')
export class DevInboxController {
  /** Read once: the supervisor sets it only when it runs the inbox. */
  private readonly enabled = process.env.DEV_INBOX === '1';

  constructor(
    // forwardRef: app.module.ts imports this file, so PG_POOL is read when Nest injects, not at load.
    @Inject(forwardRef(() => PG_POOL)) private readonly db: Pool,
    @Inject(CallerResolver) private readonly callers: CallerResolver,
  ) {}

  @Get()
  async list(@Req() request: FastifyRequest, @Query() query: unknown): Promise<DevInboxMessage[]> {
    if (!this.enabled) throw notFound('dev inbox');
    const caller = await this.callers.operator(request);
    const { to } = validate(DevInboxQuery, query, 'query');
    const { rows } = await this.db.query<{ id: string; to: string[]; subject: string; text: string; html: string | null; received_at: Date }>(
      `select id, "to", subject, text, html, received_at from dev_inbox
       where project_id in (select p.id from projects p join team_members m on m.team_id = p.team_id where m.account_id = $2)
         and ($1::text is null or exists (select 1 from unnest("to") as recipient where lower(recipient) = lower($1)))
       order by received_at desc, id desc
       limit ${MAX_MESSAGES}`,
      [to?.trim() || null, caller.accountId],
    );
    return rows.map((row) => ({ id: row.id, to: row.to, subject: row.subject, text: row.text, html: row.html, at: row.received_at.toISOString() }));
  }
}

/**
 * The built-in development inbox: a real SMTP server on 127.0.0.1 that keeps
 * every message it accepts in the platform database (`dev_inbox`, created by
 * the control plane's migrations), where `GET /api/dev/inbox` reads it back,
 * each message to the team of the project its `X-Baseplane-Project` header names.
 * The local stack runs it when SMTP_URL is not set.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import pg from 'pg';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { MAIL_PROJECT_HEADER } from '@baseplane/contracts';
import type { StackLog } from './stack-log';

/** A running dev inbox. */
export interface DevInbox {
  port: number;
  /** What the services get as SMTP_URL: `smtp://127.0.0.1:<port>`. */
  url: string;
  /** Stops accepting mail, lets open sessions end (1 s at most), closes the database pool. */
  stop(): Promise<void>;
}

/** What {@link startDevInbox} needs. */
export interface DevInboxOptions {
  /** Platform database holding the `dev_inbox` table. */
  databaseUrl: string;
  log: StackLog;
}

/** Emails of the auth flows are a few kilobytes; this only keeps a runaway sender out. */
const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
const CLOSE_TIMEOUT_MS = 1_000;

/** The header naming the project a message is for, as mailparser keys it (lowercase). */
const PROJECT_HEADER = MAIL_PROJECT_HEADER.toLowerCase();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The project a message names, or null: none, a second one, or not a UUID. */
function projectOf(header: unknown): string | null {
  return typeof header === 'string' && UUID.test(header.trim()) ? header.trim().toLowerCase() : null;
}

/** An SMTP reply to the client: smtp-server answers with `responseCode` and the message. */
function smtpError(responseCode: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode });
}

/** Starts the SMTP server on a free port of 127.0.0.1; resolves once it listens. */
export async function startDevInbox(options: DevInboxOptions): Promise<DevInbox> {
  const { log } = options;
  const db = new pg.Pool({ connectionString: options.databaseUrl, max: 2, application_name: 'baseplane-dev-inbox' });
  // An idle connection dropped by a database restart must not crash the supervisor.
  db.on('error', () => {});

  /** Parses one message and stores it; a failure is a transient SMTP error, so the sender knows. */
  const store = async (raw: Buffer, recipients: string[]): Promise<string> => {
    const parsed = await simpleParser(raw);
    const id = randomUUID();
    const subject = parsed.subject ?? '';
    await db.query('insert into dev_inbox (id, "to", subject, text, html, project_id) values ($1, $2, $3, $4, $5, $6)', [
      id,
      recipients,
      subject,
      parsed.text ?? '',
      parsed.html === false ? null : parsed.html,
      projectOf(parsed.headers.get(PROJECT_HEADER)),
    ]);
    // Recipients and subject only: the body carries codes.
    log.line('dev-inbox', `received "${subject}" for ${recipients.join(', ')}`);
    return id;
  };

  const onData = (stream: SMTPServerDataStream, session: SMTPServerSession, callback: (error?: Error | null, message?: string) => void) => {
    const chunks: Buffer[] = [];
    let length = 0;
    stream.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length <= MAX_MESSAGE_BYTES) chunks.push(chunk);
    });
    stream.once('end', () => {
      if (stream.sizeExceeded || length > MAX_MESSAGE_BYTES) {
        callback(smtpError(552, 'message exceeds the fixed maximum message size'));
        return;
      }
      // The envelope, not the To header, says who gets it (Bcc included).
      const recipients = session.envelope.rcptTo.map((rcpt) => rcpt.address);
      store(Buffer.concat(chunks), recipients).then(
        (id) => callback(null, `queued as ${id}`),
        (error: unknown) => {
          // e.g. the table does not exist yet (the control plane has not migrated) or the database is down.
          log.line('dev-inbox', `could not store a message: ${(error as Error).message}`);
          callback(smtpError(451, 'the dev inbox could not store the message; try again later'));
        },
      );
    });
  };

  const server = new SMTPServer({
    name: 'baseplane-dev-inbox',
    banner: 'Baseplane development inbox',
    size: MAX_MESSAGE_BYTES,
    // Plain SMTP on loopback: no TLS upgrade (its self-signed certificate would make
    // nodemailer refuse) and no AUTH (anyone on this machine may drop mail here).
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    closeTimeout: CLOSE_TIMEOUT_MS,
    onData,
  });
  // A broken client connection is the client's problem; only log it.
  server.on('error', (error) => log.line('dev-inbox', `SMTP error: ${error.message}`, false));

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.server.off('error', reject);
      resolve();
    });
  }).catch(async (error: unknown) => {
    await db.end();
    throw error;
  });
  const port = (server.server.address() as AddressInfo).port;
  log.line('dev-inbox', `SMTP on 127.0.0.1:${port}; read it at GET /api/dev/inbox`);

  let stopping: Promise<void> | undefined;
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => server.close(() => resolve())).then(() => db.end())),
  };
}

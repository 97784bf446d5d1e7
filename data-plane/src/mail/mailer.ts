/**
 * Sends the data plane's emails over SMTP with nodemailer. A message the
 * server does not take becomes a 503 `email_unavailable`, never a silent
 * success; the body (it carries a code) is never logged nor put in the error.
 */
import nodemailer from 'nodemailer';
import { ApiError, MAIL_PROJECT_HEADER } from '@baseplane/contracts';

/** One email to one address; `text` and `html` are the two forms of the same body. */
export interface OutgoingMail {
  /** One mailbox, handed to the server as it is: never read as a list or a display form. */
  to: string;
  /** The project it is sent for, in its {@link MAIL_PROJECT_HEADER}: the dev inbox shows it to that project's team only. */
  projectId: string;
  subject: string;
  text: string;
  html: string;
}

/** Hands emails to a mail server. */
export interface Mailer {
  /** Resolves once the server has accepted the message; rejects with ApiError 503 `email_unavailable`. */
  send(mail: OutgoingMail): Promise<void>;
}

/**
 * Kept short so that a dead or hung server fails the request within seconds
 * instead of holding it for nodemailer's defaults (2 min to connect, 10 min idle).
 */
const CONNECTION_TIMEOUT_MS = 5_000;
const GREETING_TIMEOUT_MS = 5_000;
const SOCKET_TIMEOUT_MS = 5_000;

/**
 * nodemailer over SMTP; a failure to hand the message over becomes
 * ApiError(503, 'email_unavailable', ...). Never log or put the message body in the error.
 *
 * @param smtpUrl `smtp://[user:pass@]host:port` or `smtps://…` (nodemailer's URL options allowed).
 * @param from the sender, e.g. `Baseplane <no-reply@example.com>`.
 */
export function createMailer(smtpUrl: string, from: string): Mailer {
  // One connection per message (no pool): emails are rare, and nothing stays open to close.
  const transport = nodemailer.createTransport(
    {
      url: smtpUrl,
      connectionTimeout: CONNECTION_TIMEOUT_MS,
      greetingTimeout: GREETING_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS,
      dnsTimeout: CONNECTION_TIMEOUT_MS,
      logger: false,
      debug: false,
    },
    { from },
  );

  return {
    async send(mail) {
      try {
        // An address object, not a string: nodemailer parses a string as an address list (comments, angle
        // brackets, commas), so a string could reach another mailbox than the account's, or several.
        await transport.sendMail({ to: { name: '', address: mail.to }, subject: mail.subject, text: mail.text, html: mail.html, headers: { [MAIL_PROJECT_HEADER]: mail.projectId } });
      } catch (error) {
        const failure = new ApiError(
          503,
          'email_unavailable',
          'the email could not be sent; try again later',
          { reason: reasonOf(error) },
          'the mail server (SMTP_URL or the project\'s SMTP settings) is unreachable or refused the message',
        );
        // Kept for a log line by whoever catches it: nodemailer's errors name the
        // server and its reply, never the message body.
        failure.cause = error;
        throw failure;
      }
    },
  };
}

/** A stable word for what went wrong, from nodemailer's error code. */
function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ECONNECTION':
    case 'ECONNREFUSED':
    case 'EDNS':
    case 'ESOCKET':
    case 'ETLS':
    case 'EREQUIRETLS':
    case 'EPROXY':
      return 'connection_failed';
    case 'ETIMEDOUT':
      return 'timeout';
    case 'EAUTH':
    case 'ENOAUTH':
      return 'authentication_failed';
    case 'EENVELOPE':
    case 'EMESSAGE':
      return 'rejected';
    default:
      return 'send_failed';
  }
}

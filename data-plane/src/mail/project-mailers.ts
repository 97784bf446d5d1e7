/**
 * Which mail server a project's emails go through: its own SMTP settings
 * (an auth-settings event, the URL sealed) when it has them, else the
 * platform's (SMTP_URL, or the local stack's dev inbox).
 */
import type { SecretBox } from '@baseplane/contracts';
import type { DirectoryEntry } from '../directory/project-directory';
import { createMailer, type Mailer } from './mailer';

export class ProjectMailers {
  /** By sealed URL and sender: a settings change makes a new one, the old one is simply no longer asked for. */
  private readonly own = new Map<string, Mailer>();

  constructor(private readonly platform: Mailer, private readonly box: SecretBox) {}

  for(project: DirectoryEntry): Mailer {
    const smtp = project.authSettings.smtp;
    if (!smtp) return this.platform;
    const key = `${smtp.urlCipher}\n${smtp.from}`;
    let mailer = this.own.get(key);
    if (!mailer) {
      mailer = createMailer(this.box.open(smtp.urlCipher), smtp.from);
      this.own.set(key, mailer);
    }
    return mailer;
  }
}

/**
 * The emails that carry a one-time code: one plain-text and one HTML body per
 * purpose, naming the project. Pure; the code itself is made in auth/codes.ts.
 */

/** Why a code is sent; also the `purpose` of the stored code. */
export type CodePurpose = 'signup' | 'recovery' | 'magiclink' | 'email_change' | 'reauthentication' | 'invite';

/** The wording of one purpose; `{project}` is the project's name. */
interface Wording {
  subject: string;
  /** What the code is for, ending before the code. */
  lead: string;
  /** Reassurance for someone who did not ask for this email. */
  ignore: string;
}

const WORDING: Record<CodePurpose, Wording> = {
  signup: {
    subject: 'Confirm your email for {project}',
    lead: 'Welcome to {project}. Enter this code to confirm your email address:',
    ignore: 'If you did not sign up for {project}, you can ignore this email.',
  },
  recovery: {
    subject: 'Reset your {project} password',
    lead: 'Enter this code to choose a new password for your {project} account:',
    ignore: 'If you did not ask to reset your password, you can ignore this email; your password stays as it is.',
  },
  magiclink: {
    subject: 'Your {project} sign-in code',
    lead: 'Enter this code to sign in to {project}:',
    ignore: 'If you did not try to sign in to {project}, you can ignore this email.',
  },
  email_change: {
    subject: 'Confirm your new email for {project}',
    lead: 'Enter this code to make this address the email of your {project} account:',
    ignore: 'If you did not ask to change your email on {project}, you can ignore this email.',
  },
  reauthentication: {
    subject: 'Confirm it is you on {project}',
    lead: 'Enter this code to confirm it is you before a sensitive change on {project}:',
    ignore: 'If you did not ask for this, someone may be using your {project} session; sign out everywhere and change your password.',
  },
  invite: {
    subject: 'You are invited to {project}',
    lead: 'You have been invited to {project}. Enter this code to accept the invitation and sign in:',
    ignore: 'If you were not expecting this invitation, you can ignore this email.',
  },
};

/** What a code email needs. `ttlMinutes` is how long the code stays valid. */
export interface CodeEmailInput {
  projectName: string;
  code: string;
  ttlMinutes: number;
  /** Where the app continues (an invitation's redirect), shown after the code. */
  continueAt?: string | undefined;
}

/** Subject, plain-text and HTML bodies of the email carrying `code` for `purpose`. */
export function codeEmail(purpose: CodePurpose, input: CodeEmailInput): { subject: string; text: string; html: string } {
  const wording = WORDING[purpose];
  // A project name is free text: one line in the subject, escaped in the HTML.
  const project = input.projectName.replace(/\s+/g, ' ').trim();
  // A replacer function, so that `$&` in a project name stays literal.
  const fill = (template: string, name: string) => template.replaceAll('{project}', () => name);
  const validity = `The code is valid for ${minutes(input.ttlMinutes)} and can be used once.`;

  const text = [
    fill(wording.lead, project),
    '',
    `    ${input.code}`,
    '',
    validity,
    ...(input.continueAt ? [`Then continue at ${input.continueAt}`] : []),
    fill(wording.ignore, project),
    '',
  ].join('\n');

  const name = escapeHtml(project);
  const code = escapeHtml(input.code);
  const html = `<!doctype html>
<html>
<body style="font-family: sans-serif; color: #1f2328; line-height: 1.5">
<p>${fill(escapeHtml(wording.lead), `<strong>${name}</strong>`)}</p>
<p style="font-size: 28px; font-weight: bold; letter-spacing: 6px; font-family: monospace">${code}</p>
<p>${escapeHtml(validity)}</p>
${input.continueAt ? `<p>Then continue at <a href="${escapeHtml(input.continueAt)}">${escapeHtml(input.continueAt)}</a></p>\n` : ''}<p style="color: #59636e">${fill(escapeHtml(wording.ignore), name)}</p>
</body>
</html>
`;

  return { subject: fill(wording.subject, project), text, html };
}

function minutes(count: number): string {
  return count === 1 ? '1 minute' : `${count} minutes`;
}

/** Escapes text for an HTML element or a quoted attribute. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The code emails: one per purpose, naming the project and the code, the name escaped in HTML. */
import { describe, expect, it } from 'vitest';
import { codeEmail, type CodePurpose } from '../src/mail/templates';

const PURPOSES: CodePurpose[] = ['signup', 'recovery', 'magiclink', 'email_change', 'reauthentication', 'invite'];

describe('codeEmail', () => {
  it.each(PURPOSES)('%s: subject, text and html name the project; text and html carry the code and its validity', (purpose) => {
    const email = codeEmail(purpose, { projectName: 'Todo App', code: '042137', ttlMinutes: 10 });
    expect(email.subject).toContain('Todo App');
    for (const body of [email.text, email.html]) {
      expect(body).toContain('Todo App');
      expect(body).toContain('042137');
      expect(body).toContain('10 minutes');
    }
    expect(email.html).toMatch(/^<!doctype html>/);
  });

  it('has its own wording for each purpose', () => {
    const subjects = PURPOSES.map((purpose) => codeEmail(purpose, { projectName: 'P', code: '000000', ttlMinutes: 10 }).subject);
    expect(new Set(subjects).size).toBe(PURPOSES.length);
  });

  it('escapes HTML in the project name, and keeps it literal in the text', () => {
    const projectName = `<script>alert("x")</script> & 'co' $& $1`;
    const email = codeEmail('magiclink', { projectName, code: '123456', ttlMinutes: 10 });
    expect(email.html).not.toContain('<script>');
    expect(email.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39; $&amp; $1');
    expect(email.text).toContain(projectName);
    expect(email.subject).toContain(projectName);
  });

  it('keeps the subject on one line whatever the project name holds', () => {
    const email = codeEmail('signup', { projectName: 'evil\r\nBcc: victim@example.com', code: '123456', ttlMinutes: 1 });
    expect(email.subject).not.toMatch(/[\r\n]/);
    expect(email.text).toContain('valid for 1 minute and');
  });
});

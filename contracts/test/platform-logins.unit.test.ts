/**
 * A project login refused for its password is healed once and tried again;
 * heals are per role, one at a time, at most one per interval, and only ever
 * for the role and password derived from a project id.
 */
import { describe, expect, it } from 'vitest';
import { HEAL_INTERVAL_MS, PlatformLogins, resetPasswordSql, tenantOwnerRole } from '../src';

const PROJECT = '0b6f1d2e-8c3a-4e5f-9a1b-2c3d4e5f6a7b';
const refused = () => Object.assign(new Error('password authentication failed'), { code: '28P01' });

function setup(healDelayMs = 0) {
  const statements: string[] = [];
  const logins = new PlatformLogins('postgres://admin:secret@127.0.0.1:5432/postgres', 'platform-secret', async (sql) => {
    statements.push(sql);
    await new Promise((resolve) => setTimeout(resolve, healDelayMs));
  });
  return { logins, statements };
}

/** A connect refused until a heal ran, as PostgreSQL does while the role has another password. */
function lockedOut(statements: string[]) {
  let attempts = 0;
  return {
    get attempts() {
      return attempts;
    },
    connect: async () => {
      attempts++;
      if (statements.length === 0) throw refused();
      return { release: () => undefined };
    },
  };
}

describe('PlatformLogins', () => {
  it('heals the derived role of a refused login with a SCRAM verifier and connects again, once', async () => {
    const { logins, statements } = setup();
    const login = lockedOut(statements);
    await expect(logins.connect(PROJECT, 'owner', login.connect)).resolves.toBeDefined();
    expect(login.attempts).toBe(2);
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain(`alter role "${tenantOwnerRole(PROJECT)}" password 'SCRAM-SHA-256$4096:`);
    expect(statements[0]).toContain('rolcanlogin');
  });

  it('passes any other failure as it is, with no heal', async () => {
    const { logins, statements } = setup();
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    await expect(logins.connect(PROJECT, 'owner', () => Promise.reject(down))).rejects.toBe(down);
    expect(statements).toEqual([]);
  });

  it('heals nothing for an id that names no project', async () => {
    const { logins, statements } = setup();
    const error = refused();
    await expect(logins.connect('x"; drop role postgres; --', 'owner', () => Promise.reject(error))).rejects.toBe(error);
    expect(statements).toEqual([]);
    expect(() => resetPasswordSql('evil"role', 'SCRAM-SHA-256$4096:a$b:c')).toThrow();
  });

  it('runs one heal for logins refused together, then none again within the interval', async () => {
    const { logins, statements } = setup(50);
    const login = lockedOut(statements);
    await Promise.all(Array.from({ length: 5 }, () => logins.connect(PROJECT, 'authenticator', login.connect)));
    expect(statements).toHaveLength(1);
    // Changed again at once: refused as it is, until the interval has passed.
    const error = refused();
    await expect(logins.connect(PROJECT, 'authenticator', () => Promise.reject(error))).rejects.toBe(error);
    expect(statements).toHaveLength(1);
    // Another role of the same project has its own turn.
    let applyRefused = false;
    await expect(logins.connect(PROJECT, 'apply', async () => {
      if (!applyRefused) {
        applyRefused = true;
        throw refused();
      }
      return {};
    })).resolves.toBeDefined();
    expect(statements).toHaveLength(2);
  });

  it('heals again once the interval has passed', { timeout: HEAL_INTERVAL_MS + 5_000 }, async () => {
    const { logins, statements } = setup();
    await logins.connect(PROJECT, 'owner', lockedOut(statements).connect);
    await new Promise((resolve) => setTimeout(resolve, HEAL_INTERVAL_MS + 10));
    let first = true;
    await logins.connect(PROJECT, 'owner', async () => {
      if (first) {
        first = false;
        throw refused();
      }
      return {};
    });
    expect(statements).toHaveLength(2);
  });

  it('wraps a pool’s connect in both its forms (pool.query calls back)', async () => {
    const { logins, statements } = setup();
    const login = lockedOut(statements);
    const pool = logins.healing({ connect: login.connect } as { connect: (callback?: (error: unknown, client?: unknown) => void) => unknown }, PROJECT, 'owner');
    const client = await new Promise((resolve, reject) => pool.connect((error, connected) => (error ? reject(error) : resolve(connected))));
    expect(client).toHaveProperty('release');
    await expect(pool.connect() as Promise<unknown>).resolves.toHaveProperty('release');
    expect(statements).toHaveLength(1);
  });
});

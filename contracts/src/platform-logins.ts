/**
 * The logins the platform keeps for each project, their passwords derived
 * from PLATFORM_SECRET: the owner (SQL console, management reads, auth), the
 * apply role (the workflow's changes) and the data-API login (data API,
 * storage). PostgreSQL lets any role change its own password, and owner code
 * can reach each of them (the console is the owner; an rpc function may
 * `reset role` to the data-API login, a trigger during a change to the apply
 * role), so a project's owner could lock the platform out of their project.
 * The platform owns these credentials: a login refused with 28P01 has its
 * password set back to the derived one over the cluster's admin connection
 * (as a SCRAM verifier, never the password) and is tried once more.
 *
 * Only a role derived here from a project id, with that project's own
 * password, is ever reset; never a role named by input. Heals are throttled
 * per role: one at a time, and at most one every {@link HEAL_INTERVAL_MS}.
 * Like transaction.ts it works on what it is handed (a pool shaped like
 * pg's, a function running admin SQL): contracts opens no connection.
 */
import { applyPasswordPurpose, authenticatorPasswordPurpose, deriveSecret, ownerPasswordPurpose } from './keys';
import { scramVerifier } from './scram';
import { tenantOwnerUrl } from './transaction';
import { tenantApplyRole, tenantAuthenticatorRole, tenantDatabaseName, tenantOwnerRole } from './workflows';

export type PlatformLogin = 'owner' | 'apply' | 'authenticator';

/** SQLSTATE invalid_password: the server refused the login's password. */
const INVALID_PASSWORD = '28P01';
/** A role's password is set back at most this often (a loop changing it again cannot make the platform hammer the cluster). */
export const HEAL_INTERVAL_MS = 5_000;

/** What a heal reports, for the service's log (never a password). */
export interface HealReport {
  projectId: string;
  login: PlatformLogin;
  role: string;
  /** Set when the heal itself failed (the login is then refused as it was). */
  error?: unknown;
}

interface RoleState {
  /** When the last heal started (the throttle). */
  triedAt: number;
  /** When the last successful heal ended. */
  healedAt: number;
  healing?: Promise<boolean>;
}

/** Pools shaped like pg's: `connect()` resolves to a client; `connect(callback)` (how `pool.query` takes one) calls back. */
export interface HealablePool {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  connect(...args: any[]): any;
}

type ConnectCallback = (error: unknown, client?: { release: unknown }, release?: unknown) => void;

export class PlatformLogins {
  private readonly roles = new Map<string, RoleState>();

  /**
   * `tenantClusterUrl` is TENANT_DATABASE_URL; `admin` runs one statement on
   * that cluster as its (super)user; `report` hears each heal.
   */
  constructor(
    private readonly tenantClusterUrl: string,
    private readonly platformSecret: string,
    private readonly admin: (sql: string) => Promise<unknown>,
    private readonly report: (heal: HealReport) => void = () => undefined,
  ) {}

  /** The role and derived password of a project's login. */
  private credentials(projectId: string, login: PlatformLogin): { role: string; password: string } {
    switch (login) {
      case 'owner':
        return { role: tenantOwnerRole(projectId), password: deriveSecret(this.platformSecret, ownerPasswordPurpose(projectId)) };
      case 'apply':
        return { role: tenantApplyRole(projectId), password: deriveSecret(this.platformSecret, applyPasswordPurpose(projectId)) };
      case 'authenticator':
        return { role: tenantAuthenticatorRole(projectId), password: deriveSecret(this.platformSecret, authenticatorPasswordPurpose(tenantDatabaseName(projectId))) };
    }
  }

  /** The connection URL of a project's login on its database. */
  url(projectId: string, login: PlatformLogin): string {
    const { role, password } = this.credentials(projectId, login);
    return tenantOwnerUrl(this.tenantClusterUrl, role, password, tenantDatabaseName(projectId));
  }

  /**
   * Runs `connect` (a login as the project's `login`); refused with 28P01,
   * heals the role's password and runs it once more. Any other failure, or
   * one while heals are throttled, is thrown as it is.
   */
  async connect<T>(projectId: string, login: PlatformLogin, connect: () => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      return await connect();
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== INVALID_PASSWORD) throw error;
      if (!(await this.heal(projectId, login, started))) throw error;
      return connect();
    }
  }

  /** `pool` with its `connect` (both forms, so `pool.query` too) going through {@link connect}. */
  healing<P extends HealablePool>(pool: P, projectId: string, login: PlatformLogin): P {
    const connect = pool.connect.bind(pool) as () => Promise<{ release: unknown }>;
    pool.connect = (callback?: ConnectCallback) => {
      const connected = this.connect(projectId, login, () => connect());
      if (!callback) return connected;
      connected.then((client) => callback(undefined, client, client.release), (error: unknown) => callback(error));
      return undefined;
    };
    return pool;
  }

  /**
   * Sets the role's password back to the derived one, unless a heal ended
   * since `since` (that login was tried before it: trying again is enough) or
   * one is under way (shared). Answers whether the login is worth trying
   * again; false while throttled or when the heal failed.
   */
  private heal(projectId: string, login: PlatformLogin, since: number): Promise<boolean> {
    // Role names come from a project id only: one that is not a UUID names no project, and nothing is reset for it.
    if (!/^[0-9a-f]{32}$/i.test(projectId.replace(/-/g, ''))) return Promise.resolve(false);
    const { role, password } = this.credentials(projectId, login);
    const now = Date.now();
    let state = this.roles.get(role);
    if (state?.healing) return state.healing;
    if (state && state.healedAt >= since) return Promise.resolve(true);
    if (state && now - state.triedAt < HEAL_INTERVAL_MS) return Promise.resolve(false);
    for (const [name, old] of this.roles) if (!old.healing && now - old.triedAt >= HEAL_INTERVAL_MS) this.roles.delete(name);
    state = { triedAt: now, healedAt: state?.healedAt ?? 0 };
    this.roles.set(role, state);
    const healed = state;
    healed.healing = this.admin(resetPasswordSql(role, scramVerifier(password))).then(
      () => {
        healed.healedAt = Date.now();
        this.report({ projectId, login, role });
        return true;
      },
      (error: unknown) => {
        this.report({ projectId, login, role, error });
        return false;
      },
    ).finally(() => {
      healed.healing = undefined;
    });
    return healed.healing;
  }
}

/**
 * Sets `role`'s password to `verifier`, if the role still exists and may log
 * in: a deleted project's roles are dropped, or kept without login or
 * password (the worker's disableRoleSql), and stay so.
 */
export function resetPasswordSql(role: string, verifier: string): string {
  if (!/^[a-z0-9_]+$/.test(role) || !/^SCRAM-SHA-256\$[0-9]+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/.test(verifier)) {
    throw new Error('resetPasswordSql takes a derived role name and a SCRAM verifier');
  }
  return `do $heal$ begin
    if exists (select from pg_roles where rolname = '${role}' and rolcanlogin) then
      alter role "${role}" password '${verifier}';
    end if;
  end $heal$`;
}

/**
 * The room a replica's tenant connections share: the data API's pools and
 * lanes, auth's and storage's, of every project, all draw on the tenant
 * cluster's one max_connections. Whichever of them is refused a connection
 * for want of room (53300) makes the replica give back every connection it
 * keeps idle, and tries again.
 */
import { ApiError } from '@baseplane/contracts';

/** The answer when a project's database cannot be reached, or has no room for this replica. */
export const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');

/** SQLSTATE too_many_connections: the cluster is at max_connections. */
const TOO_MANY_CONNECTIONS = '53300';
/** Tries at a connection the cluster refuses for want of room: 50, 100, … 250 ms apart. */
const ROOM_ATTEMPTS = 6;

export class ConnectionRoom {
  private readonly idleClosers: Array<() => Promise<void>> = [];

  /** Adds what closes a holder's idle connections (each ProjectPools and Pipelines adds its own when made). */
  add(closeIdle: () => Promise<void>): void {
    this.idleClosers.push(closeIdle);
  }

  /**
   * Runs `work`, which may open a new connection; when the cluster refuses
   * it (53300: every replica's connections to every project share
   * max_connections), closes the idle connections of every holder and tries
   * again, a few times over about a second. Refused still, 503
   * `project_unavailable`.
   */
  async withRoom<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if ((error as { code?: unknown }).code !== TOO_MANY_CONNECTIONS) throw error;
        if (attempt === ROOM_ATTEMPTS) throw unreachable();
        await Promise.all(this.idleClosers.map((closeIdle) => closeIdle()));
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }
}

/**
 * A pool's idle connection that failed (PostgreSQL restarted or stopped, the
 * connection cut), made fit for a log line: pg-pool hangs the failed client on
 * the error (`err.client`), and a logger's error serializer printed it whole,
 * kilobytes of driver state in one warning at every stop of the stack. The
 * client is taken off (pg-pool is done with it once it emits the error); the
 * kind, message, SQLSTATE and the driver's other fields stay.
 */
export function idleConnectionError(error: Error): Error {
  delete (error as { client?: unknown }).client;
  return error;
}

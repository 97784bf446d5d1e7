/**
 * `start` and the benches run as children of `bin/baseplane.mjs`, in a process
 * group of their own, which it links to them with an IPC channel. Should it
 * die without passing a signal on (SIGKILL, a crash), the channel closes, and
 * this turns that into the SIGTERM it would have sent: the stack stops in
 * order instead of running on with no one to stop it.
 */
let following = false;

/** Idempotent; does nothing without the channel (run directly, not through baseplane.mjs). */
export function stopWhenParentGoes(): void {
  if (!process.channel || following) return;
  following = true;
  // Only a watch: the channel must not keep the process alive (a bench exits when its work is done).
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}

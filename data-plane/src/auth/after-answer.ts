/**
 * Work an answer leaves behind (a code mailed after the answer, so that known
 * and unknown addresses are answered alike): it starts once the answer has
 * gone, and a stopping replica finishes it before it closes its pools.
 */
export class AfterAnswer {
  private readonly running = new Set<Promise<void>>();

  /** Runs `task` after this turn of the event loop; `task` reports its own failures (nobody waits for it). */
  run(task: () => Promise<void>): void {
    const done: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(task)
      .catch(() => undefined)
      .finally(() => this.running.delete(done));
    this.running.add(done);
  }

  /** Resolves once every task started so far has ended. */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }
}

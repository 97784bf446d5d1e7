/**
 * What every generated-request test (fast-check) shares: how many cases a run
 * makes and from which seed, so that `FUZZ_RUNS` widens any of them and
 * `FUZZ_SEED` repeats a failure it printed.
 */

/** fast-check's parameters: `FUZZ_RUNS` cases (else `runs`, the test's default), from `FUZZ_SEED` when given. */
export function fuzzRuns(runs: number): { numRuns: number; seed?: number } {
  return { numRuns: Number(process.env.FUZZ_RUNS ?? runs), seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined };
}

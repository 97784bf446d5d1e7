/**
 * The one test configuration of the workspace: every `<part>/test/**.test.ts`
 * runs against a single real local stack started by deploy/test/global-setup.ts.
 */
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, '**/.data/**'],
    globalSetup: ['deploy/test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Test files share one stack and the machine has two cores: one file at a
    // time keeps timings (and failures) reproducible.
    pool: 'forks',
    fileParallelism: false,
  },
});

/**
 * The environment a test stack starts from: the caller's, minus what describes
 * the developer's own `npm start` instance rather than the stack under test.
 */

/** Variables that would point a test stack at the developer's instance or change its pace. */
const INSTANCE_VARIABLES = ['PORT', 'PUBLIC_URL', 'AUTH_URL', 'DATA_DIR', 'WORKER_STEP_DELAY_MS'] as const;

/** process.env without {@link INSTANCE_VARIABLES}, plus `overrides`. */
export function stackTestEnv(overrides: Record<string, string> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of INSTANCE_VARIABLES) delete env[name];
  return { ...env, ...overrides };
}

/** Parses BASEPLANE_TEST_SERVICE_ENV: a JSON object of string values for the service processes. */
export function serviceEnvFromJson(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw.trim() === '') return {};
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('BASEPLANE_TEST_SERVICE_ENV must be a JSON object');
  }
  return Object.fromEntries(Object.entries(parsed).map(([name, value]) => [name, String(value)]));
}

/**
 * client/README.md's examples, run as written against the real stack (the
 * import line pointed at the source), in order, each checked against what
 * its comments say it prints. Blocks marked "In a browser page" are left out.
 */
import { readFileSync } from 'node:fs';
import { format } from 'node:util';
import { afterEach, beforeAll, expect, inject, it, vi } from 'vitest';
import * as client from '../src/index';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const examples = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => !code.startsWith('// In a browser page'));
const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;

/** Runs one example with its `import { … } from '@baseplane/client'` bound to the source; answers what it printed. */
async function run(code: string): Promise<string[]> {
  const printed: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void printed.push(format(...args)));
  const body = code.replace(/^import \{[^}]*\} from '@baseplane\/client';$/m, '');
  expect(body).not.toContain('import ');
  try {
    await new AsyncFunction('createClient', 'createManagementClient', body)(client.createClient, client.createManagementClient);
  } finally {
    log.mockRestore();
  }
  return printed;
}

beforeAll(() => {
  process.env.BASEPLANE_URL = inject('baseUrl');
});
afterEach(() => vi.restoreAllMocks());

it('has the four runnable examples: management, auth, data, storage', () => {
  expect(examples.map((code) => /createManagementClient\(/.test(code))).toEqual([true, false, false, false]);
  expect(examples).toHaveLength(4);
});

it('management: makes the project the others use', async () => {
  const printed = await run(examples[0]!);
  expect(printed).toEqual(['{ rows: [], total: 0 }', '409 already_exists', `PROJECT_ID=${process.env.PROJECT_ID} ANON_KEY=${process.env.ANON_KEY}`]);
  expect(process.env.ANON_KEY).toMatch(/^bp_anon_/);
});

it('end-user auth: events, a refusal, the user', async () => {
  const printed = await run(examples[1]!);
  expect(printed).toEqual([
    'INITIAL_SESSION null',
    expect.stringMatching(/^SIGNED_IN ada-\d+@example.com$/),
    '409 user_already_exists',
    expect.stringMatching(/^USER_UPDATED ada-/),
    expect.stringMatching(/^TOKEN_REFRESHED ada-/),
    'SIGNED_OUT null',
    expect.stringMatching(/^SIGNED_IN ada-/),
    'SIGNED_OUT null',
    'Ada 3600',
  ]);
});

it('data API: writes, reads, RLS', async () => {
  const printed = await run(examples[2]!);
  expect(printed[0]).toMatch(/^201 \[ \{ id: \d+, title: 'write the client' \}, \{ id: \d+, title: 'test it' \} \]$/);
  expect(printed.slice(1)).toEqual(["[ { title: 'write the client' } ] 1", "{ title: 'test it well' }", '[]', '401 42501']);
});

it('storage: upload, refusal, list, download, signed and public URLs', async () => {
  const printed = await run(examples[3]!);
  expect(printed[0]).toMatch(/path: '[0-9a-f-]+\/face\.png'[\s\S]*size: 4[\s\S]*contentType: 'image\/png'/);
  expect(printed.slice(1)).toEqual(['409 already_exists', '1 4 true 200']);
});

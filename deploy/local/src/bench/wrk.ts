/**
 * HTTP load from wrk (Debian's `wrk`: C, epoll, one thread), so the cores of
 * this machine go to the service under test rather than to a load generator
 * in Node, which costs about as much per request as the data plane itself.
 *
 * The same request templates as http-load.ts: `{n}` a random 1..rows,
 * `{state}` one of `states` (a random one per request), or with `nextState`
 * a chain: each state is spent by one request and replaced by that field of
 * its answer (a refresh token rotated by every call).
 *
 * wrk's own cost per request is kept near pgbench's, its counterpart in
 * bench:rest, since both share the two cores with the service: a template
 * without states is formatted once per `{n}` and kept (a Lua `request()` that
 * fills and formats every request cost a sixth more per request), and only a
 * chain, or a status outside 2xx, has a Lua `response()` callback (which makes
 * wrk copy every answer's headers and body into Lua: another sixth). Without
 * it, wrk counts the answers outside 2xx/3xx, and one request sent before the
 * load checks the exact status, with its answer as the first error.
 *
 * Several base URLs (the replicas of the fleet) each get a wrk process with
 * their share of the connections, as a load balancer in front of the fleet
 * would spread them; the figures are their sum, and the percentiles are
 * merged from each process's latency distribution.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runCaptured } from '../child-process';
import type { LoadOptions, LoadResult, RequestSpec } from './http-load';

/** wrk as baseplane.mjs found or installed it. */
const WRK = process.env.BASEPLANE_WRK_BIN?.trim() || 'wrk';
/** Quantiles each wrk prints (0.1 % … 99.9 %), to merge processes' distributions. */
const QUANTILES = 999;

/** A Lua long string: no escaping to get wrong, whatever the text holds. */
const lua = (text: string) => {
  let level = '';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
};

/**
 * The wrk script of `spec`. wrk runs it once per thread (init, request,
 * response) and once in its main thread (setup, done), which reads the
 * threads' counters and prints one result line.
 */
function script(spec: RequestSpec, rows: number): string {
  const headers = Object.entries(spec.headers).map(([name, value]) => `[ ${lua(name)} ] = ${lua(value)}`);
  if (spec.body !== undefined) headers.push(`["Content-Type"] = "application/json"`);
  return `
local method, path, body, status, rows = ${lua(spec.method)}, ${lua(spec.path)}, ${spec.body === undefined ? 'nil' : lua(spec.body)}, ${spec.status}, ${rows}
local headers = { ${headers.join(', ')} }
local next_field = ${spec.nextState ? lua(`"${spec.nextState}":"([^"]+)"`) : 'nil'}
local check_each = ${checksEachAnswer(spec)}
local states = {}
-- Requests of a template without states, formatted once per {n} (one n at each of its places).
local formatted = ${usesStates(spec) ? 'nil' : '{}'}
mismatched = 0
first_error = nil

function init(args)
  math.randomseed(tonumber(args[2]))
  if args[1] ~= "" then for line in io.lines(args[1]) do states[#states + 1] = line end end
end

-- {n} becomes \`n\` if given, else a random 1..rows at each place; {state} becomes \`state\`.
local function fill(text, state, n)
  text = text:gsub("{n}", n or function() return tostring(math.random(1, rows)) end)
  if state then text = text:gsub("{state}", function() return state end) end
  return text
end

local function build(state, n)
  local filled = {}
  for name, value in pairs(headers) do filled[name] = fill(value, state, n) end
  return wrk.format(method, fill(path, state, n), filled, body and fill(body, state, n))
end

function request()
  if formatted then
    local n = math.random(1, rows)
    local ready = formatted[n] or build(nil, tostring(n))
    formatted[n] = ready
    return ready
  end
  local state
  if next_field then
    -- wrk also builds one request that is never sent; the caller gives spare states for it.
    state = table.remove(states) or "exhausted"
  elseif #states > 0 then
    state = states[math.random(1, #states)]
  end
  return build(state)
end

local function refuse(text)
  mismatched = mismatched + 1
  if not first_error then first_error = (text:sub(1, 200):gsub("[\\r\\n]", " ")) end
end

-- Defined only where needed: with it wrk copies every answer into Lua.
if check_each then
  function response(answer_status, answer_headers, answer_body)
    if answer_status ~= status then return refuse(answer_status .. " " .. answer_body) end
    if next_field then
      local next_state = answer_body:match(next_field)
      if next_state then states[#states + 1] = next_state else refuse("no next state in " .. answer_body) end
    end
  end
end

local threads = {}
function setup(thread) threads[#threads + 1] = thread end

function done(summary, latency, requests)
  local refused, first = 0, nil
  for _, thread in ipairs(threads) do
    refused = refused + thread:get("mismatched")
    first = first or thread:get("first_error")
  end
  if not check_each then refused = refused + summary.errors.status end
  local socket = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  local quantiles = {}
  for i = 1, ${QUANTILES} do quantiles[i] = latency:percentile(i * 100 / ${QUANTILES + 1}) end
  io.write("WRK_RESULT ", summary.requests, " ", summary.duration, " ", refused, " ", socket, " ", table.concat(quantiles, ","), "\\n")
  if first then io.write("WRK_FIRST_ERROR ", first, "\\n") end
end
`;
}

/** Whether the spec's `{state}` values come from states (a template without them is formatted once per `{n}`). */
const usesStates = (spec: RequestSpec) => spec.nextState !== undefined || (spec.states?.length ?? 0) > 0;

/** Whether each answer goes through Lua: a chain reads its next state there, and only there is a status outside 2xx told apart. */
const checksEachAnswer = (spec: RequestSpec) => spec.nextState !== undefined || spec.status < 200 || spec.status > 299;

/**
 * One request of `spec` sent before a load that wrk checks only for 2xx/3xx:
 * the exact status, and the answer when it differs (the load's first error).
 */
async function probe(base: string, spec: RequestSpec): Promise<string | undefined> {
  const fill = (text: string) => text.replaceAll('{n}', '1').replaceAll('{state}', spec.states?.[0] ?? '');
  const headers = Object.fromEntries(Object.entries(spec.headers).map(([name, value]) => [name, fill(value)]));
  if (spec.body !== undefined) headers['content-type'] = 'application/json';
  const answer = await fetch(new URL(fill(spec.path), base), { method: spec.method, headers, body: spec.body === undefined ? undefined : fill(spec.body) });
  const text = await answer.text();
  return answer.status === spec.status ? undefined : `${answer.status} ${text}`.slice(0, 200).replace(/[\r\n]/g, ' ');
}

interface ProcessResult {
  requests: number;
  seconds: number;
  errors: number;
  firstError?: string;
  /** Latency quantiles in ms. */
  quantiles: number[];
}

async function runWrk(base: string, connections: number, seconds: number, scriptFile: string, statesFile: string): Promise<ProcessResult> {
  const seed = String(Math.floor(Math.random() * 2 ** 31));
  const { code, out } = await runCaptured(WRK, ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', scriptFile, base, '--', statesFile, seed]);
  const line = /^WRK_RESULT (\d+) (\d+) (\d+) (\d+) (\S+)$/m.exec(out);
  if (code !== 0 || !line) throw new Error(`wrk exited ${code}: ${out.trim().slice(0, 500)}`);
  return {
    requests: Number(line[1]),
    seconds: Number(line[2]) / 1e6,
    errors: Number(line[3]) + Number(line[4]),
    firstError: /^WRK_FIRST_ERROR (.*)$/m.exec(out)?.[1],
    quantiles: line[5]!.split(',').map((us) => Number(us) / 1000),
  };
}

/** Percentile `p` of several processes' quantiles, each weighted by its share of the requests. */
function mergedPercentile(results: ProcessResult[], p: number): number {
  const points = results.flatMap((r) => r.quantiles.map((value) => ({ value, weight: r.requests / r.quantiles.length }))).sort((a, b) => a.value - b.value);
  const total = points.reduce((sum, point) => sum + point.weight, 0);
  let seen = 0;
  for (const point of points) {
    seen += point.weight;
    if (seen >= (p / 100) * total) return point.value;
  }
  return points.at(-1)?.value ?? 0;
}

/** `total` split over `parts` as evenly as whole numbers go. */
const shares = (total: number, parts: number) => Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));

/** wrk runs a load makes: a warm-up, if any, then the measured one. */
const runsOf = (options: LoadOptions) => (options.warmUpSeconds > 0 ? 2 : 1);

/** How many states a chained load over `baseCount` servers with `options` spends (wrkLoad refuses fewer). */
export function statesForChain(baseCount: number, options: LoadOptions): number {
  return runsOf(options) * baseCount * (2 * Math.max(...shares(options.concurrency, baseCount)) + 1);
}

/**
 * Loads `bases` with `spec` at `options.concurrency` connections in all: a
 * warm-up run, then the measured one. A chained spec spends its states: the
 * warm-up takes the first half, the measured run the second, and each wrk
 * process needs two states per connection of its own.
 */
export async function wrkLoad(bases: string[], spec: RequestSpec, options: LoadOptions): Promise<LoadResult> {
  const connections = shares(options.concurrency, bases.length);
  const states = spec.states ?? [];
  const runs = runsOf(options);
  const needed = statesForChain(bases.length, options);
  if (spec.nextState && states.length < needed) throw new Error(`a chained load needs ${needed} states, got ${states.length}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baseplane-wrk-'));
  try {
    const scriptFile = path.join(dir, 'load.lua');
    await writeFile(scriptFile, script(spec, options.rows ?? 1));
    // Each process of each run gets its own states file: a chain's states are spent by the run that holds them.
    const statesFiles = async (run: number) => {
      const files: string[] = [];
      for (let i = 0; i < bases.length; i++) {
        const file = path.join(dir, `states-${run}-${i}`);
        const mine = spec.nextState ? states.filter((_, k) => k % (runs * bases.length) === run * bases.length + i) : states;
        await writeFile(file, mine.join('\n'));
        files.push(file);
      }
      return files;
    };
    const loadOnce = async (run: number, seconds: number) => {
      const files = await statesFiles(run);
      return Promise.all(bases.map((base, i) => runWrk(base, connections[i]!, seconds, scriptFile, files[i]!)));
    };
    const refused = checksEachAnswer(spec) ? undefined : await probe(bases[0]!, spec);
    if (runs === 2) await loadOnce(0, options.warmUpSeconds);
    const results = await loadOnce(runs - 1, options.seconds);
    const requests = results.reduce((sum, r) => sum + r.requests, 0);
    const errors = results.reduce((sum, r) => sum + r.errors, 0);
    return {
      requests,
      perSecond: results.reduce((sum, r) => sum + r.requests / r.seconds, 0),
      p50: mergedPercentile(results, 50),
      p99: mergedPercentile(results, 99),
      // A probe answered with another 2xx fails the load whose every answer wrk let pass.
      errors: refused === undefined ? errors : Math.max(errors, 1),
      firstError: refused ?? results.find((r) => r.firstError)?.firstError,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// The bench's shared parts: its options, the environment every case runs in, timing of one
// command and of interleaved cases, the statistics, and the teardowns every section registers.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Every name the bench gives (workspaces, containers) starts with it, so its leftovers are its own. */
export const tag = `bench${process.pid}`;
export const bin = (tool) => path.join(repo, 'tools', tool, 'bin', tool);

/** The command line: the case counts, the sections to run, where the raw figures go. */
export function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string' },
      only: { type: 'string' },
      json: { type: 'string' },
      'caller-env': { type: 'boolean', default: false },
      requests: { type: 'string', default: '400' },
      'stream-mib': { type: 'string', default: '256' },
      brokers: { type: 'string', default: '16' },
      soak: { type: 'string', default: '64' },
      'soak-egress': { type: 'string', default: 'runtime' },
      refs: { type: 'string', default: '120000' },
      'big-gib': { type: 'string', default: '1' },
      'flood-seconds': { type: 'string', default: '300' },
      floods: { type: 'string', default: 'distinct,identical,relay,files' },
      image: { type: 'string', default: 'localhost/agent-sandbox:latest' },
      versus: { type: 'string' },
      agents: { type: 'string' },
      'quiet-seconds': { type: 'string', default: '60' },
      'quiet-files': { type: 'string', default: '' },
      'quiet-pairs': { type: 'string', default: '1' },
    },
    strict: true,
  });
  return {
    runs: Number(values.runs ?? process.env.BENCH_RUNS ?? 15),
    only: values.only ? new Set(values.only.split(',')) : undefined,
    json: values.json,
    callerEnv: values['caller-env'],
    requests: Number(values.requests),
    streamMiB: Number(values['stream-mib']),
    brokers: Number(values.brokers),
    soak: Number(values.soak),
    soakEgress: values['soak-egress'],
    refs: Number(values.refs),
    bigGib: Number(values['big-gib']),
    floodSeconds: Number(values['flood-seconds']),
    floods: new Set(values.floods.split(',')),
    image: values.image,
    versus: values.versus,
    agents: values.agents,
    quietSeconds: Number(values['quiet-seconds']),
    quietFiles: values['quiet-files'] ? values['quiet-files'].split(',').map(Number) : [],
    quietPairs: Number(values['quiet-pairs']),
  };
}

export const options = parseOptions(process.argv.slice(2));
/** The image every session runs (node 18, git and egress-relay in it). */
export const image = options.image;

// Every case runs in the same environment: a small one by default (PATH, LANG, HOME), or the
// caller's with --caller-env (a NODE_EXTRA_CA_CERTS there costs every node start ~40 ms here).
export const baseEnv = options.callerEnv ? { ...process.env } : { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** The p-th percentile (nearest rank). */
export const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
export const ms = (x) => `${x.toFixed(0).padStart(5)} ms`;
export const ratio = (a, b) => `${(a / b).toFixed(2)}x`;
export const now = () => Number(process.hrtime.bigint()) / 1e6;
export const sleep = (t) => new Promise((r) => setTimeout(r, t));
export const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * CPU milliseconds (user + system) of this process's children that have been waited for, and of
 * what they waited for in turn (cutime + cstime): load moves it far less than wall time. In clock
 * ticks of 10 ms, so a case's figure is a mean over its runs.
 */
export const childCpuMs = () => {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
};

/** Throws when a case's command exited with a status it was not expected to. */
function checkStatus(cmd, argv, status, expect, stderr) {
  if (expect !== 'any' && !expect.includes(status)) {
    throw new Error(`${cmd} ${argv.join(' ')}: exit ${status}, expected ${expect}\n${String(stderr).slice(-2000)}`);
  }
}

/**
 * Runs one command to completion; returns wall milliseconds (spawn to exit), CPU milliseconds,
 * its status and its spawn and exit times (epoch ms, to place it among podman's events).
 */
export function timed(cmd, argv, { input, env, expect = [0] } = {}) {
  const startedAt = Date.now();
  const t0 = now();
  const c0 = childCpuMs();
  const r = spawnSync(cmd, argv, { input: input ?? '', env: env ?? baseEnv, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  const wall = now() - t0;
  const endedAt = Date.now();
  const cpu = childCpuMs() - c0;
  checkStatus(cmd, argv, r.status ?? r.signal, expect, r.stderr);
  return { wall, cpu, status: r.status, stdout: String(r.stdout), stderr: String(r.stderr), startedAt, endedAt };
}

/**
 * Runs one command to completion, its stdin an open pipe as a terminal's would be; `wall` is
 * the time from its spawn to the first byte on its stdout (what a person sees first), `total`
 * the time to its exit.
 */
export function firstOutput(cmd, argv, { env, expect = [0] } = {}) {
  return new Promise((resolve, reject) => {
    const startedAt = Date.now();
    const t0 = now();
    const child = spawn(cmd, argv, { env: env ?? baseEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    let first;
    let stderr = '';
    child.stdout.on('data', () => (first ??= now() - t0));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      const total = now() - t0;
      try {
        checkStatus(cmd, argv, code ?? signal, expect, stderr);
        if (first === undefined) throw new Error(`${cmd} ${argv.join(' ')}: printed nothing on stdout`);
        resolve({ wall: first, total, status: code, startedAt, endedAt: Date.now() });
      } catch (err) {
        reject(err);
      }
    });
    child.stdin.end();
  });
}

/**
 * Interleaves the cases run after run (so load drift hits them alike); per case the median wall
 * time, the mean CPU time, and each run's spawn and exit times (`runs`). A case may be async.
 */
export async function compare(cases, n = options.runs) {
  const runs = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let i = 0; i < n; i += 1) {
    for (const [name, fn] of Object.entries(cases)) runs[name].push(await fn());
  }
  return Object.fromEntries(Object.entries(runs).map(([k, rs]) => [k, summarize(rs)]));
}

/** A case's figures from its runs: median, min and max wall, mean CPU, the last status, and the runs' times. */
function summarize(rs) {
  const w = rs.map((r) => r.wall);
  const cpu = rs.reduce((sum, r) => sum + (r.cpu ?? 0), 0) / rs.length;
  const times = rs.map((r) => ({ wall: r.wall, startedAt: r.startedAt, endedAt: r.endedAt }));
  return { median: median(w), min: Math.min(...w), max: Math.max(...w), cpu, exit: rs.at(-1).status, runs: times };
}

/** One line per case: its median, and its spread or its ratio to `base`. */
export function printCases(r, base) {
  for (const [k, v] of Object.entries(r)) {
    const tail = base ? `${(v.median / base).toFixed(2)}x` : `(min ${v.min.toFixed(0)}, max ${v.max.toFixed(0)})`;
    console.log(`   ${k.padEnd(40)} ${ms(v.median)}  ${tail}`);
  }
}

/** A child process whose end resolves with its exit code, its stderr, and its spawn and exit times (epoch ms). */
export function started(cmd, argv, opts) {
  const t0 = now();
  const spawnedAt = Date.now();
  const child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'], ...opts });
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stderr, wall: now() - t0, spawnedAt, exitedAt: Date.now() })),
  );
  return { child, done };
}

const teardowns = [];
/** Registers a cleanup; they run in reverse order at the end, also after a failure or ^C. */
export const onTeardown = (fn) => teardowns.push(fn);
export async function runTeardowns() {
  while (teardowns.length > 0) {
    try {
      await teardowns.pop()();
    } catch (err) {
      console.error(`bench: cleanup: ${err.message}`);
    }
  }
}

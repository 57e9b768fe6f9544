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
      image: { type: 'string', default: 'localhost/agent-sandbox:latest' },
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
    image: values.image,
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

/** Runs one command to completion; returns wall milliseconds (spawn to exit), CPU milliseconds and its status. */
export function timed(cmd, argv, { input, env, expect = [0] } = {}) {
  const t0 = now();
  const c0 = childCpuMs();
  const r = spawnSync(cmd, argv, { input: input ?? '', env: env ?? baseEnv, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  const wall = now() - t0;
  const cpu = childCpuMs() - c0;
  if (expect !== 'any' && !expect.includes(r.status)) {
    throw new Error(`${cmd} ${argv.join(' ')}: exit ${r.status ?? r.signal}, expected ${expect}\n${String(r.stderr).slice(-2000)}`);
  }
  return { wall, cpu, status: r.status, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** Interleaves the cases run after run (so load drift hits them alike); per case the median wall time and the mean CPU time. */
export function compare(cases, n = options.runs) {
  const walls = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  const cpu = Object.fromEntries(Object.keys(cases).map((k) => [k, 0]));
  const status = {};
  for (let i = 0; i < n; i += 1) {
    for (const [name, fn] of Object.entries(cases)) {
      const r = fn();
      walls[name].push(r.wall);
      cpu[name] += r.cpu ?? 0;
      status[name] = r.status;
    }
  }
  return Object.fromEntries(Object.entries(walls).map(([k, w]) => [k, { median: median(w), min: Math.min(...w), max: Math.max(...w), cpu: cpu[k] / n, exit: status[k] }]));
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
  const done = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr, wall: now() - t0, spawnedAt, exitedAt: Date.now() })));
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

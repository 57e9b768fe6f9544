#!/usr/bin/env node
// pnpm bench: what a session and each executable cost, side by side with baselines measured in
// the same run (medians of interleaved runs, ratios printed, never pass/fail). Needs root (rootful
// podman, as the launcher tests), the built tools and the agent image. Not part of `pnpm test`.
// Long because it is one script of five measured sections that share one fixture; scripts/bench/
// splits it as sections are added.
//
//   pnpm bench [--runs N] [--only 1,2,3,4,5] [--json FILE] [--caller-env]
//
// 1 session overhead: `agent-sandbox run -- true` vs bare `podman run --rm` (same argv), podman processes per session
// 2 each executable's cold start for a typical input vs `node -e 0`
// 3 `agent-sandbox plan` for a workspace that is a linked git worktree
// 4 16 sessions launched at once: all succeed, attributed, ledger lines, nothing left, launcher peak RSS
// 5 cost as work grows: 1/10/100 worktrees + staged credentials beside the session; 10 vs 100 000 workspace files
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const runs = Number(opt('runs', process.env.BENCH_RUNS ?? 15));
const only = new Set(String(opt('only', '1,2,3,4,5')).split(','));
const jsonOut = opt('json', undefined);
const image = 'localhost/agent-sandbox:latest';
const tag = `bench${process.pid}`;
const bin = (tool) => path.join(repo, 'tools', tool, 'bin', tool);
const results = { runs, loadavg: {}, sections: {} };

// Every case runs in the same environment: a small one by default (PATH, LANG, HOME), or the
// caller's with --caller-env (a NODE_EXTRA_CA_CERTS there costs every node start ~40 ms here).
const callerEnv = args.includes('--caller-env');
const baseEnv = callerEnv ? { ...process.env } : { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (x) => `${x.toFixed(0).padStart(5)} ms`;
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** Runs one command to completion; returns wall milliseconds (spawn to exit) and its status. */
function timed(cmd, argv, { input, env, expect = [0] } = {}) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, argv, { input: input ?? '', env: env ?? baseEnv, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (expect !== 'any' && !expect.includes(r.status)) {
    throw new Error(`${cmd} ${argv.join(' ')}: exit ${r.status ?? r.signal}, expected ${expect}\n${String(r.stderr).slice(-2000)}`);
  }
  return { wall, status: r.status, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** Interleaves the cases run after run (so load drift hits them alike); medians per case. */
function compare(cases, n = runs) {
  const walls = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  const status = {};
  for (let i = 0; i < n; i += 1) {
    for (const [name, fn] of Object.entries(cases)) {
      const r = fn();
      walls[name].push(r.wall);
      status[name] = r.status;
    }
  }
  return Object.fromEntries(Object.entries(walls).map(([k, w]) => [k, { median: median(w), min: Math.min(...w), max: Math.max(...w), exit: status[k] }]));
}

// ---- fixture: permitted root, HOME with a codex credential, ledger ----
const base = mkdtempSync('/tmp/agent-sandbox-bench-');
chmodSync(base, 0o755);
const home = path.join(base, 'home');
mkdirSync(path.join(home, '.codex'), { recursive: true });
writeFileSync(path.join(home, '.codex', 'auth.json'), JSON.stringify({ OPENAI_API_KEY: 'bench-not-a-secret' }), { mode: 0o600 });
const env = { ...baseEnv, HOME: home };
const git = (cwd, ...a) => timed('git', ['-C', cwd, ...a], { env: { ...env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' } });

function makeRoot(name) {
  const root = path.join(base, name);
  mkdirSync(path.join(root, 'workspaces'), { recursive: true });
  return root;
}
function plainWorkspace(root, id) {
  const ws = path.join(root, 'workspaces', id);
  mkdirSync(ws, { recursive: true });
  chownSync(ws, 1000, 1000);
  return ws;
}
/** A repo under <root>/repos/main and `count` linked worktrees as workspaces <prefix>0..; returns their ids. */
function worktreeWorkspaces(root, prefix, count) {
  const main = path.join(root, 'repos', 'main');
  mkdirSync(main, { recursive: true });
  git(main, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(main, 'README'), 'bench\n');
  git(main, 'add', 'README');
  git(main, 'commit', '-q', '-m', 'bench');
  const ids = [];
  for (let i = 0; i < count; i += 1) {
    const id = `${prefix}${i}`;
    git(main, 'worktree', 'add', '-q', '-b', id, path.join(root, 'workspaces', id));
    ids.push(id);
  }
  return ids;
}
const flags = (root, id, ledger = path.join(base, 'state', 'ledger.jsonl')) => [
  '--runtime', 'codex', '--workspace', id, '--root', root, '--ledger', ledger, '--memory', '256m', '--pids', '64', '--image', image,
];
const launcher = (sub, root, id, extra = [], rest = []) => () =>
  timed(bin('agent-sandbox'), [sub, ...flags(root, id), ...extra, '--agent-bin', 'true', '--', ...rest], { env });
const nodeZero = () => timed(process.execPath, ['-e', '0'], { env });

function cleanup() {
  spawnSync('sh', ['-c', `podman --runtime runc ps -aq --filter name=agent-sandbox-${tag} | xargs -r podman --runtime runc rm -f >/dev/null 2>&1`]);
  spawnSync('podman', ['--runtime', 'runc', 'rm', '-f', '--ignore', `${tag}-attrib`], { stdio: 'ignore' });
  rmSync(base, { recursive: true, force: true });
}
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

/** Executables started during one run, by basename, from strace (execve that succeeded). */
function processesOf(cmd, argv) {
  const out = path.join(base, `strace-${Math.random().toString(16).slice(2)}.txt`);
  spawnSync('strace', ['-f', '-qq', '-e', 'trace=execve', '-o', out, cmd, ...argv], { env, stdio: 'ignore' });
  const counts = {};
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = /execve\("([^"]+)".*= 0$/.exec(line);
    if (!m) continue;
    const name = path.basename(m[1]);
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

// The bins run their bundle only while it is fresh (lib/shared/src/bin-entry.cts): make them so,
// as `pnpm build` does last, and say which entry each bin runs.
spawnSync(process.execPath, [path.join(repo, 'scripts', 'bundle-bins.mjs')], { stdio: 'ignore' });
const entryModule = path.join(repo, 'lib', 'shared', 'dist', 'bin-entry.cjs');
const { binEntry } = existsSync(entryModule) ? await import(entryModule) : { binEntry: () => ({ kind: 'unbundled' }) };
const tools = ['path-guard', 'cred-stage', 'mount-plan', 'nnp-probe', 'sandbox-run', 'podman-attrib', 'agent-unsafe', 'agent-sandbox'];
results.entries = Object.fromEntries(tools.map((t) => [t, binEntry(bin(t), t).kind]));
console.log(`agent-sandbox bench: ${runs} runs per case, medians; load average at start ${(results.loadavg.start = loadavg())}; ${process.version}, ${spawnSync('nproc').stdout.toString().trim()} CPUs; ${callerEnv ? `caller's environment${process.env.NODE_EXTRA_CA_CERTS ? ' (NODE_EXTRA_CA_CERTS set)' : ''}` : 'environment PATH, LANG, HOME only'}`);

console.log(`entries: ${Object.entries(results.entries).map(([t, e]) => `${t} ${e}`).join(', ')}`);

// ---- 1: a session vs a bare podman run ----
if (only.has('1')) {
  const root = makeRoot('s1');
  const id = `${tag}-s1`;
  plainWorkspace(root, id);
  const plan = JSON.parse(launcher('plan', root, id)().stdout);
  const bare = [...plan.argv];
  bare.splice(bare.indexOf('run') + 1, 0, '--rm');
  bare[bare.indexOf('--name') + 1] = `agent-sandbox-${tag}-bare`;
  // plan stages nothing, so its credential mount names the host file (unreadable to uid 1000):
  // give the bare run a staged copy like the launcher's (owned by 1000, mode 0400).
  const staged = path.join(base, 'bare-secret', 'auth.json');
  mkdirSync(path.dirname(staged), { mode: 0o700 });
  writeFileSync(staged, readFileSync(path.join(home, '.codex', 'auth.json')), { mode: 0o400 });
  chownSync(path.dirname(staged), 1000, 1000);
  chownSync(staged, 1000, 1000);
  for (let i = 0; i < bare.length; i += 1) bare[i] = bare[i].replace(`source=${path.join(home, '.codex', 'auth.json')},`, `source=${staged},`);
  const r = compare({
    'agent-sandbox run -- true': launcher('run', root, id),
    'podman run --rm (same argv)': () => timed(bare[0], bare.slice(1), { env }),
    'node -e 0': nodeZero,
  });
  const ratio = r['agent-sandbox run -- true'].median / r['podman run --rm (same argv)'].median;
  const procs = processesOf(bin('agent-sandbox'), ['run', ...flags(root, id), '--agent-bin', 'true', '--']);
  const bareProcs = processesOf(bare[0], bare.slice(1));
  results.sections['1'] = { ...r, ratio, processes: { launcher: procs, bare: bareProcs } };
  console.log('\n1. session overhead (target: ratio <= 1.35)');
  for (const [k, v] of Object.entries(r)) console.log(`   ${k.padEnd(34)} ${ms(v.median)}  (min ${v.min.toFixed(0)}, max ${v.max.toFixed(0)})`);
  console.log(`   ratio run/bare                     ${ratio.toFixed(2)}`);
  console.log(`   podman processes per session: launcher ${procs.podman ?? 0}, bare ${bareProcs.podman ?? 0} (podman's own exit cleanup included in both)`);
  console.log(`   other host processes of the launcher: ${Object.entries(procs).filter(([k]) => !['podman', 'conmon', 'runc', 'exe', 'tini', 'node', 'agent-entrypoint', 'find', 'cred-stage', 'true', 'agent-sandbox', 'env'].includes(k)).map(([k, v]) => `${k} x${v}`).join(', ') || 'none'}`);
}

// ---- 2: each executable's cold start vs node -e 0 ----
if (only.has('2')) {
  const root = makeRoot('s2');
  const id = `${tag}-s2`;
  const ws = plainWorkspace(root, id);
  const attribCtr = `${tag}-attrib`;
  timed('podman', ['--runtime', 'runc', 'run', '--name', attribCtr, '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096', '--entrypoint', 'true', image]);
  const plan = { image, sessionId: id, limits: { memory: '256m', memorySwap: '256m', pids: 64, cpus: 1, cpuShares: 256 }, command: ['true'] };
  const cases = {
    'node -e 0': nodeZero,
    'path-guard {path,root}': () => timed(bin('path-guard'), [], { input: JSON.stringify({ path: `workspaces/${id}`, root }) }),
    'cred-stage plan codex': () => timed(bin('cred-stage'), ['plan'], { input: JSON.stringify({ runtime: 'codex', home }), env }),
    'mount-plan {workspace,root,id}': () => timed(bin('mount-plan'), [], { input: JSON.stringify({ workspace: ws, root, sessionId: id }) }),
    'nnp-probe': () => timed(bin('nnp-probe'), []),
    // What nnp-probe must ask every time (measure, never assume): systemd's version and linger.
    'systemd-run --version': () => timed('systemd-run', ['--version']),
    'loginctl show-user (linger)': () => timed('loginctl', ['show-user', os.userInfo().username, '--property=Linger', '--value'], { expect: 'any' }),
    'sandbox-run --dry-run': () => timed(bin('sandbox-run'), ['--dry-run'], { input: JSON.stringify(plan) }),
    'podman-attrib --container (kept)': () => timed(bin('podman-attrib'), ['--container', attribCtr]),
    'podman container inspect (kept)': () => timed('podman', ['--runtime', 'runc', 'container', 'inspect', attribCtr]),
    'agent-unsafe codex (no TTY: 90)': () => timed(bin('agent-unsafe'), ['codex', '--', '--version'], { expect: [90] }),
    'agent-sandbox hosts': () => timed(bin('agent-sandbox'), ['hosts'], { env }),
  };
  const r = compare(cases);
  const zero = r['node -e 0'].median;
  results.sections['2'] = r;
  console.log('\n2. executable cold start vs node -e 0 (target: <= 2x each)');
  for (const [k, v] of Object.entries(r)) {
    const vsWith = (...others) => (v.median / (zero + others.reduce((sum, o) => sum + r[o].median, 0))).toFixed(2);
    const extra = k.startsWith('podman-attrib')
      ? `   (vs node -e 0 + podman inspect: ${vsWith('podman container inspect (kept)')})`
      : k === 'nnp-probe'
        ? `   (vs node -e 0 + systemd-run --version + loginctl: ${vsWith('systemd-run --version', 'loginctl show-user (linger)')})`
        : '';
    console.log(`   ${k.padEnd(34)} ${ms(v.median)}  ${(v.median / zero).toFixed(2)}x${extra}`);
  }
}

// ---- 3: plan for a linked worktree ----
if (only.has('3')) {
  const root = makeRoot('s3');
  const [id] = worktreeWorkspaces(root, `${tag}-wt`, 1);
  const r = compare({ 'agent-sandbox plan (worktree)': launcher('plan', root, id), 'node -e 0': nodeZero });
  const plan = JSON.parse(launcher('plan', root, id)().stdout);
  results.sections['3'] = { ...r, gitKind: plan.git.kind };
  console.log('\n3. plan for a linked worktree (target: < 150 ms)');
  for (const [k, v] of Object.entries(r)) console.log(`   ${k.padEnd(34)} ${ms(v.median)}  (min ${v.min.toFixed(0)}, max ${v.max.toFixed(0)})`);
  console.log(`   git kind ${plan.git.kind}, ${plan.mounts.length} mounts; ratio to node -e 0 ${(r['agent-sandbox plan (worktree)'].median / r['node -e 0'].median).toFixed(2)}`);
}

// ---- 4: 16 sessions at once ----
if (only.has('4')) {
  const root = makeRoot('s4');
  const ledger = path.join(base, 'state', 'concurrent.jsonl');
  const ids = Array.from({ length: 16 }, (_, i) => `${tag}-c${String(i).padStart(2, '0')}`);
  for (const id of ids) plainWorkspace(root, id);
  const t0 = process.hrtime.bigint();
  const peaks = new Map();
  const pids = [];
  const children = ids.map((id) => {
    const start = process.hrtime.bigint();
    // The shim is `#!/usr/bin/env node`: env execs node in place, so child.pid is the launcher.
    const child = spawn(bin('agent-sandbox'), ['run', ...flags(root, id, ledger), '--agent-bin', 'sh', '--', '-c', 'sleep 0.5'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    pids.push(child.pid);
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    return new Promise((resolve) => child.on('exit', (code) => resolve({ id, code, stderr, wall: Number(process.hrtime.bigint() - start) / 1e6 })));
  });
  const sampler = setInterval(() => {
    for (const pid of pids) {
      try {
        const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
        peaks.set(pid, Math.max(peaks.get(pid) ?? 0, kb));
      } catch {
        // exited
      }
    }
  }, 50);
  const done = await Promise.all(children);
  clearInterval(sampler);
  const total = Number(process.hrtime.bigint() - t0) / 1e6;
  const lines = existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const ok = done.filter((d) => d.code === 0).length;
  const attributed = ids.filter((id) => lines.some((l) => l.sessionId === id && l.outcome === 'ran' && l.reason === 'exited' && l.peak)).length;
  const left = spawnSync('podman', ['--runtime', 'runc', 'ps', '-aq', '--filter', `name=agent-sandbox-${tag}-c`]).stdout.toString().trim().split('\n').filter(Boolean).length;
  const cgroupsLeft = ids.filter((id) => existsSync(`/sys/fs/cgroup/memory/agent-sandbox/${id}`) || existsSync(`/sys/fs/cgroup/agent-sandbox/${id}`)).length;
  const peakKb = Math.max(0, ...peaks.values());
  results.sections['4'] = { total, sessionMedian: median(done.map((d) => d.wall)), ok, attributed, ledgerLines: lines.length, containersLeft: left, cgroupsLeft, launcherPeakRssKb: peakKb, failures: done.filter((d) => d.code !== 0).map((d) => ({ id: d.id, code: d.code, stderr: d.stderr.slice(-500) })) };
  console.log('\n4. 16 sessions at once (sh -c "sleep 0.5" each)');
  console.log(`   succeeded ${ok}/16, attributed ${attributed}/16, ledger lines ${lines.length}, containers left ${left}, parent cgroups left ${cgroupsLeft}`);
  console.log(`   all done in ${ms(total)}; per session median ${ms(median(done.map((d) => d.wall)))}, max ${ms(Math.max(...done.map((d) => d.wall)))}`);
  console.log(`   launcher peak RSS (VmHWM sampled every 50 ms, max over the 16): ${(peakKb / 1024).toFixed(1)} MiB`);
  for (const f of results.sections['4'].failures) console.log(`   FAILED ${f.id} exit ${f.code}: ${f.stderr.trim().split('\n').pop()}`);
}

// ---- 5: cost as work grows ----
if (only.has('5')) {
  const n = Math.max(5, Math.ceil(runs / 2));
  const cases = {};
  for (const count of [1, 10, 100]) {
    const root = makeRoot(`s5-${count}`);
    const ids = worktreeWorkspaces(root, `${tag}-g${count}-`, count);
    for (const other of ids.slice(1)) {
      const dir = path.join(root, 'secrets', other, 'codex');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'auth.json'), '{}', { mode: 0o400 });
    }
    for (const id of ids) chownSync(path.join(root, 'workspaces', id), 1000, 1000);
    cases[`${count} worktree(s) + staged creds`] = launcher('run', root, ids[0]);
  }
  for (const files of [10, 100_000]) {
    const root = makeRoot(`s5-f${files}`);
    const id = `${tag}-f${files}`;
    const ws = plainWorkspace(root, id);
    for (let d = 0; d * 1000 < files; d += 1) {
      const dir = path.join(ws, `d${d}`);
      mkdirSync(dir);
      for (let f = 0; f < Math.min(1000, files - d * 1000); f += 1) writeFileSync(path.join(dir, `f${f}`), '');
    }
    cases[`workspace of ${files} files`] = launcher('run', root, id);
  }
  const r = compare(cases, n);
  results.sections['5'] = r;
  console.log(`\n5. launch time as work grows (${n} runs each)`);
  const first = r['1 worktree(s) + staged creds'].median;
  const small = r['workspace of 10 files'].median;
  for (const [k, v] of Object.entries(r)) console.log(`   ${k.padEnd(34)} ${ms(v.median)}  ${(v.median / (k.startsWith('workspace') ? small : first)).toFixed(2)}x`);
}

results.loadavg.end = loadavg();
console.log(`\nload average at end ${results.loadavg.end}`);
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(results, null, 2)}\n`);

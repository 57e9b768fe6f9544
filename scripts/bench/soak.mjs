// Section 7: the soak. N sessions (--soak, default 64) started at once through `agent-sandbox
// run`, each in its own workspace, a mix of endings: normal exits (0 and 3), OOM kills (a small
// --memory and a memory bomb), pids kills (a small --pids and a fork bomb), timeouts (a short
// --timeout and a sleep) and disk-limit stops (a small --disk and a big write). Checked once all
// launchers have exited: every session's ledger reason is its kind's, one line each, nothing
// left (soak-check.mjs). Meanwhile an unrelated `sh -c true` is started every 100 ms by its own
// process (probe.mjs), before the sessions (the baseline) and during them: its latency is the
// host's responsiveness. Sessions run with their broker (the default) unless --soak-egress none.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { bin, childCpuMs, image, loadavg, median, now, options, pct, sleep, started, tag } from './common.mjs';
import { base, env, makeRoot, plainWorkspace } from './fixture.mjs';
import { sampleRss } from './concurrent.mjs';
import { checkLedger, leftovers } from './soak-check.mjs';
import { containerEvents, cpuByKind, phases } from './soak-phases.mjs';

const ws = (id) => `/sandbox/workspaces/${id}`;
/** The kinds of session, their share of 64, the flags and script that make them end as expected. */
const kinds = [
  { kind: 'exit 0', share: 20, expect: 'exited', exit: 0, flags: [], script: (id) => `echo soak > ${ws(id)}/out; sleep 2` },
  { kind: 'exit 3', share: 8, expect: 'exited', exit: 3, flags: [], script: () => 'sleep 2; exit 3' },
  { kind: 'memory bomb', share: 10, expect: 'oom-killed', flags: ['--memory', '64m'], script: () => 'x=y; while :; do x=$x$x; done' },
  { kind: 'fork bomb', share: 10, expect: 'pids-limit', flags: ['--pids', '24'], script: () => 'f() { f | f & }; f; exec sleep 3' },
  { kind: 'timeout', share: 10, expect: 'timeout', flags: ['--timeout', '8s'], script: () => 'sleep 600' },
  { kind: 'disk', share: 6, expect: 'disk-limit', flags: ['--disk', '64m'], script: (id) => `dd if=/dev/zero of=${ws(id)}/big bs=1M count=160 status=none; sleep 600` },
];

/** N sessions, the kinds in proportion and interleaved in launch order. */
function planSessions(n) {
  const counts = kinds.map((k) => Math.floor((n * k.share) / 64));
  counts[0] += n - counts.reduce((a, b) => a + b, 0);
  const order = kinds.flatMap((k, i) => Array.from({ length: counts[i] }, (_, j) => ({ k, at: (j + 0.5) / counts[i] })));
  order.sort((a, b) => a.at - b.at);
  return order.map(({ k }, i) => ({ ...k, id: `${tag}-k${String(i).padStart(2, '0')}` }));
}

/** ['--a', 'x', '--b', 'y'] as [['--a', 'x'], ['--b', 'y']]. */
const pairs = (flags) => flags.flatMap((f, i) => (i % 2 === 0 ? [[f, flags[i + 1]]] : []));

function startProbe() {
  const child = spawn(process.execPath, [path.join(path.dirname(new URL(import.meta.url).pathname), 'probe.mjs'), '100'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const done = new Promise((resolve) => child.on('exit', () => resolve(JSON.parse(out || '[]'))));
  return { stop: () => (child.kill('SIGTERM'), done) };
}

const dist = (xs) => ({ n: xs.length, p50: pct(xs, 50), p90: pct(xs, 90), p99: pct(xs, 99), max: Math.max(...xs), over1s: xs.filter((x) => x >= 1000).length });
const fmt = (d) => `n ${d.n}, p50 ${d.p50.toFixed(1)} ms, p90 ${d.p90.toFixed(1)}, p99 ${d.p99.toFixed(1)}, max ${d.max.toFixed(1)} ms, ${d.over1s} at or over 1 s`;

/** Launches every session at once and waits for all; the probe runs before (baseline) and throughout. */
async function runAll(root, ledger, sessions, egressFlags) {
  const probe = startProbe();
  await sleep(5000);
  const t0 = now();
  const startedAt = Date.now();
  const cpu0 = childCpuMs();
  for (const s of sessions) {
    const limits = Object.entries({ '--memory': '256m', '--pids': '64', ...Object.fromEntries(pairs(s.flags)) }).flat();
    const argv = ['run', '--runtime', 'codex', '--workspace', s.id, '--root', root, '--ledger', ledger, '--image', image, ...limits, ...egressFlags];
    s.run = started(bin('agent-sandbox'), [...argv, '--agent-bin', '/bin/sh', '--', '-c', s.script(s.id)], { env });
  }
  const rss = sampleRss(sessions.map((s) => s.run.child.pid), 200);
  for (const s of sessions) s.result = await s.run.done;
  const total = now() - t0;
  const launcherCpuS = (childCpuMs() - cpu0) / 1000;
  const peaks = rss();
  const memory = { maxMiB: peaks.maxKb / 1024, medianMiB: peaks.medianKb / 1024, sumMiB: peaks.sumKb / 1024, privateMaxMiB: peaks.private.maxKb / 1024, privateMedianMiB: peaks.private.medianKb / 1024, privateSumMiB: peaks.private.sumKb / 1024 };
  const samples = await probe.stop();
  const baseline = samples.filter((x) => x.at < 5000).map((x) => x.ms);
  const during = samples.filter((x) => x.at >= 5000).map((x) => x.ms);
  const worst = samples.filter((x) => x.at >= 5000).sort((a, b) => b.ms - a.ms).slice(0, 3).map((x) => ({ atS: (x.at - 5000) / 1000, ms: x.ms }));
  return { startedAt, total, launcherCpuS, memory, latency: { before: dist(baseline), during: dist(during), worst, failed: samples.filter((x) => x.status !== undefined).length } };
}

/** Where the time went: the phases of the sessions that simply exit, and of all; the containers' CPU by kind. */
function timeFigures(sessions, run, ledger) {
  const events = containerEvents(run.startedAt, `${tag}-k`);
  const exits = sessions.filter((s) => s.expect === 'exited');
  const containerCpuS = ledger.reduce((sum, l) => sum + (l.peak?.cpuSeconds ?? 0), 0);
  return { exits: phases(exits, events), all: phases(sessions, events), cpu: cpuByKind(sessions, ledger), launcherCpuS: run.launcherCpuS, containerCpuS };
}

/** The figures issue 25 sets bounds on, each beside its bound, in one line. */
function reportBounds(n, run, checked, left, time) {
  const right = n - checked.wrong.length;
  const cpu = time.containerCpuS > 0 ? (time.launcherCpuS / time.containerCpuS).toFixed(2) : 'n/a';
  console.log(`   bounds: launchers' CPU / containers' CPU ${cpu} (at most 1.0); peak RSS per launcher max ${run.memory.maxMiB.toFixed(1)} MiB (at most 35; private ${run.memory.privateMaxMiB.toFixed(1)} MiB); host latency max ${run.latency.during.max.toFixed(0)} ms (under 1 000); reasons right ${right}/${n}; left ${left.total}`);
}

function reportTime(time) {
  const line = (p) => Object.entries(p).map(([k, v]) => `${k} ${(v.median / 1000).toFixed(1)} s (max ${(v.max / 1000).toFixed(1)})`).join(', ');
  console.log(`   where the time went (podman's events), sessions that exit: ${line(time.exits)}`);
  console.log(`   CPU: the launchers and what they waited for (podman's client, flock, du) ${time.launcherCpuS.toFixed(1)} s, the containers ${time.containerCpuS.toFixed(1)} s (conmon, podman's cleanup and the sentinels not counted)`);
  console.log(`   container CPU seconds (ledger peak), median by kind: ${Object.entries(time.cpu).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
}

function report(n, egressMode, run, checked, left, load, sessions) {
  console.log(`\n7. soak: ${n} sessions at once through agent-sandbox run (egress ${egressMode}), each its own workspace`);
  console.log(`   all ended in ${(run.total / 1000).toFixed(1)} s; launcher peak RSS max ${run.memory.maxMiB.toFixed(1)} MiB, median ${run.memory.medianMiB.toFixed(1)} MiB, sum of the ${n} peaks ${run.memory.sumMiB.toFixed(0)} MiB`);
  console.log(`   launcher peak private memory (not shared with other node processes) max ${run.memory.privateMaxMiB.toFixed(1)} MiB, median ${run.memory.privateMedianMiB.toFixed(1)} MiB, sum ${run.memory.privateSumMiB.toFixed(0)} MiB`);
  for (const k of kinds) {
    const walls = sessions.filter((s) => s.kind === k.kind).map((s) => s.result.wall);
    if (walls.length) console.log(`   ${k.kind.padEnd(12)} x${String(walls.length).padEnd(3)} ${k.flags.join(' ').padEnd(16)} expect ${k.expect.padEnd(11)} wall median ${(median(walls) / 1000).toFixed(1)} s, max ${(Math.max(...walls) / 1000).toFixed(1)} s`);
  }
  const reasons = [...new Set([...Object.keys(checked.expected), ...Object.keys(checked.got)])];
  console.log(`   reason        expected  got`);
  for (const r of reasons) console.log(`   ${r.padEnd(14)} ${String(checked.expected[r] ?? 0).padStart(6)} ${String(checked.got[r] ?? 0).padStart(5)}`);
  console.log(`   ledger: ${checked.lines} lines for ${n} sessions; exactly one each: ${checked.oneEach ? 'yes' : 'NO'}; lines of other sessions: ${checked.strangers}`);
  for (const w of checked.wrong) console.log(`   UNEXPECTED ${w.id} (${w.kind}): ${w.lines} line(s), reason ${w.reason}, exit ${w.exitCode}, launcher exit ${w.launcherExit}, egress ${w.egress}: ${w.message ?? ''}`);
  console.log(`   left afterwards: ${Object.entries(left.count).map(([k, v]) => `${k} ${v}`).join(', ')} (total ${left.total})`);
  for (const [k, v] of Object.entries(left.left)) if (Array.isArray(v) && v.length) console.log(`     ${k}: ${v.slice(0, 5).map((x) => (typeof x === 'string' ? x : `${x.pid} ${x.cmd}`)).join('; ')}`);
  console.log(`   host latency, sh -c true every 100 ms: before (5 s) ${fmt(run.latency.before)}`);
  console.log(`                                         during      ${fmt(run.latency.during)}${run.latency.failed ? `; ${run.latency.failed} failed` : ''}`);
  console.log(`   the slowest during: ${run.latency.worst.map((w) => `${w.ms.toFixed(0)} ms at ${w.atS.toFixed(1)} s`).join(', ')} (seconds after the sessions were started)`);
  console.log(`   load average: before ${load.before}, after ${load.after}`);
}

export async function soak() {
  const n = options.soak;
  const egressMode = options.soakEgress;
  const root = makeRoot('s7');
  const ledger = path.join(base, 'state', 'soak.jsonl');
  mkdirSync(path.dirname(ledger), { recursive: true });
  const sessions = planSessions(n).map((s) => ({ ...s, egress: egressMode === 'none' ? 'none' : 'broker' }));
  for (const s of sessions) plainWorkspace(root, s.id);
  const load = { before: loadavg() };
  const run = await runAll(root, ledger, sessions, egressMode === 'none' ? ['--egress', 'none'] : []);
  load.after = loadavg();
  const checked = checkLedger(ledger, sessions);
  const left = leftovers(root, sessions.map((s) => s.id), `${tag}-k`);
  // Anything left is looked at again later: gone by then (a cleanup that lost a race and a later sweep took), or not.
  const later = left.total > 0 ? (await sleep(10_000), leftovers(root, sessions.map((s) => s.id), `${tag}-k`)) : undefined;
  report(n, egressMode, run, checked, left, load, sessions);
  if (later) console.log(`   left 10 s later: ${Object.entries(later.count).map(([k, v]) => `${k} ${v}`).join(', ')} (total ${later.total})`);
  const time = timeFigures(sessions, run, checked.ledger);
  reportTime(time);
  reportBounds(n, run, checked, left, time);
  const { ledger: _lines, ...ledgerFigures } = checked;
  return { sessions: n, egress: egressMode, time, total: run.total, memory: run.memory, latency: run.latency, ledger: ledgerFigures, left: left.count, ...(later ? { leftLater: later.count } : {}), loadavg: load };
}

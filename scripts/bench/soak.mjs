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
import { bin, childCpuMs, image, loadavg, now, options, pct, sleep, started, tag } from './common.mjs';
import { base, env, makeRoot, plainWorkspace } from './fixture.mjs';
import { sampleRss } from './concurrent.mjs';
import { checkLedger, leftovers } from './soak-check.mjs';
import { containerEvents, cpuByKind, phases } from './soak-phases.mjs';
import { report, reportBounds, reportTime } from './soak-report.mjs';

const ws = (id) => `/sandbox/workspaces/${id}`;
/** The kinds of session, their share of 64, the flags and script that make them end as expected. */
const kinds = [
  { kind: 'exit 0', share: 20, expect: 'exited', exit: 0, flags: [], script: (id) => `echo soak > ${ws(id)}/out; sleep 2` },
  { kind: 'exit 3', share: 8, expect: 'exited', exit: 3, flags: [], script: () => 'sleep 2; exit 3' },
  { kind: 'memory bomb', share: 10, expect: 'oom-killed', flags: ['--memory', '64m'], script: () => 'x=y; while :; do x=$x$x; done' },
  { kind: 'fork bomb', share: 10, expect: 'pids-limit', flags: ['--pids', '24'], script: () => 'f() { f | f & }; f; exec sleep 3' },
  { kind: 'timeout', share: 10, expect: 'timeout', flags: ['--timeout', '8s'], script: () => 'sleep 600' },
  {
    kind: 'disk',
    share: 6,
    expect: 'disk-limit',
    flags: ['--disk', '64m'],
    script: (id) => `dd if=/dev/zero of=${ws(id)}/big bs=1M count=160 status=none; sleep 600`,
  },
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
  const child = spawn(process.execPath, [path.join(path.dirname(new URL(import.meta.url).pathname), 'probe.mjs'), '100'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const done = new Promise((resolve) => child.on('exit', () => resolve(JSON.parse(out || '[]'))));
  return { stop: () => (child.kill('SIGTERM'), done) };
}

const dist = (xs) => ({
  n: xs.length,
  p50: pct(xs, 50),
  p90: pct(xs, 90),
  p99: pct(xs, 99),
  max: Math.max(...xs),
  over1s: xs.filter((x) => x >= 1000).length,
});
/** Launches every session at once and waits for all; the probe runs before (baseline) and throughout. */
async function runAll(root, ledger, sessions, egressFlags) {
  const probe = startProbe();
  await sleep(5000);
  const t0 = now();
  const startedAt = Date.now();
  const cpu0 = childCpuMs();
  for (const s of sessions) {
    const limits = Object.entries({ '--memory': '256m', '--pids': '64', ...Object.fromEntries(pairs(s.flags)) }).flat();
    const argv = [
      'run',
      '--runtime',
      'codex',
      '--workspace',
      s.id,
      '--root',
      root,
      '--ledger',
      ledger,
      '--image',
      image,
      ...limits,
      ...egressFlags,
    ];
    s.run = started(bin('agent-sandbox'), [...argv, '--agent-bin', '/bin/sh', '--', '-c', s.script(s.id)], { env });
  }
  const rss = sampleRss(
    sessions.map((s) => s.run.child.pid),
    200,
  );
  for (const s of sessions) s.result = await s.run.done;
  const total = now() - t0;
  const launcherCpuS = (childCpuMs() - cpu0) / 1000;
  const peaks = rss();
  const memory = {
    maxMiB: peaks.maxKb / 1024,
    medianMiB: peaks.medianKb / 1024,
    sumMiB: peaks.sumKb / 1024,
    privateMaxMiB: peaks.private.maxKb / 1024,
    privateMedianMiB: peaks.private.medianKb / 1024,
    privateSumMiB: peaks.private.sumKb / 1024,
  };
  const samples = await probe.stop();
  const baseline = samples.filter((x) => x.at < 5000).map((x) => x.ms);
  const during = samples.filter((x) => x.at >= 5000).map((x) => x.ms);
  const worst = samples
    .filter((x) => x.at >= 5000)
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3)
    .map((x) => ({ atS: (x.at - 5000) / 1000, ms: x.ms }));
  return {
    startedAt,
    total,
    launcherCpuS,
    memory,
    latency: { before: dist(baseline), during: dist(during), worst, failed: samples.filter((x) => x.status !== undefined).length },
  };
}

/** Where the time went: the phases of the sessions that simply exit, and of all; the containers' CPU by kind. */
function timeFigures(sessions, run, ledger) {
  const events = containerEvents(run.startedAt, `${tag}-k`);
  const exits = sessions.filter((s) => s.expect === 'exited');
  const containerCpuS = ledger.reduce((sum, l) => sum + (l.peak?.cpuSeconds ?? 0), 0);
  return {
    exits: phases(exits, events),
    all: phases(sessions, events),
    cpu: cpuByKind(sessions, ledger),
    launcherCpuS: run.launcherCpuS,
    containerCpuS,
  };
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
  const left = leftovers(
    root,
    sessions.map((s) => s.id),
    `${tag}-k`,
  );
  // Anything left is looked at again later: gone by then (a cleanup that lost a race and a later sweep took), or not.
  const later =
    left.total > 0
      ? (await sleep(10_000),
        leftovers(
          root,
          sessions.map((s) => s.id),
          `${tag}-k`,
        ))
      : undefined;
  report(n, egressMode, kinds, run, checked, left, load, sessions);
  if (later)
    console.log(
      `   left 10 s later: ${Object.entries(later.count)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')} (total ${later.total})`,
    );
  const time = timeFigures(sessions, run, checked.ledger);
  reportTime(time);
  reportBounds(n, run, checked, left, time);
  const { ledger: _lines, ...ledgerFigures } = checked;
  return {
    sessions: n,
    egress: egressMode,
    time,
    total: run.total,
    memory: run.memory,
    latency: run.latency,
    ledger: ledgerFigures,
    left: left.count,
    ...(later ? { leftLater: later.count } : {}),
    loadavg: load,
  };
}

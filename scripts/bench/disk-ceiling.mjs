// Section 8: the disk ceiling's overshoot. A writer with no end (dd of 32 MiB files in a loop,
// as the escape-attempts test writes) in a session under --disk 256m, on an idle machine and
// with two busy loops beside it: what the watchdog saw at its decision (the ledger's
// evidence.disk.writtenBytes) and what the workspace held after the stop, each as MiB over the
// ceiling and as milliseconds of the same writer's speed on the host, measured in this run.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { bin, median, options, tag, timed } from './common.mjs';
import { base, env, flags, ledgerLines, makeRoot, plainWorkspace } from './fixture.mjs';

const MiB = 2 ** 20;
const limit = 256 * MiB;
const writer = (dir) => `i=0; while :; do dd if=/dev/zero of=${dir}/fill-$i bs=1M count=32 status=none; i=$((i+1)); done`;
const duBytes = (dir) => Number(spawnSync('du', ['-s', '-B1', '-x', dir]).stdout.toString().split(/\s/)[0]);

/** The writer on the host into the root's filesystem: 1 GiB, bytes per millisecond. */
function hostWriteRate(root) {
  const dir = mkdtempSync(path.join(root, 'rate-'));
  const r = timed('dd', ['if=/dev/zero', `of=${dir}/f`, 'bs=1M', 'count=1024', 'status=none']);
  rmSync(dir, { recursive: true, force: true });
  return (1024 * MiB) / r.wall;
}

function oneSession(root, id, ledger) {
  const ws = plainWorkspace(root, id);
  const r = timed(
    bin('agent-sandbox'),
    ['run', ...flags(root, id, ledger), '--disk', '256m', '--agent-bin', '/bin/sh', '--', '-c', writer(`/sandbox/workspaces/${id}`)],
    { env, expect: 'any' },
  );
  const line = ledgerLines(ledger).find((l) => l.sessionId === id);
  const left = duBytes(ws);
  rmSync(ws, { recursive: true, force: true });
  return { status: r.status, reason: line?.reason, detected: line?.evidence?.disk?.writtenBytes ?? NaN, left, wall: r.wall };
}

function busyLoops(count) {
  const loops = Array.from({ length: count }, () => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  return () => loops.forEach((l) => l.kill('SIGKILL'));
}

export async function diskCeiling() {
  const n = Math.max(3, Math.ceil(options.runs / 3));
  const root = makeRoot('s8');
  const ledger = path.join(base, 'state', 'disk-ceiling.jsonl');
  const rate = hostWriteRate(root);
  const results = {};
  for (const [name, busy] of [
    ['idle', 0],
    ['two busy loops beside it', 2],
  ]) {
    const stop = busyLoops(busy);
    const runs = [];
    try {
      for (let i = 0; i < n; i += 1) runs.push(oneSession(root, `${tag}-d${busy}-${i}`, ledger));
    } finally {
      stop();
    }
    results[name] = runs;
  }
  console.log(
    `\n8. the disk ceiling: a writer with no end under --disk 256m (${n} sessions per case; the writer on the host: ${Math.round((rate * 1000) / MiB)} MiB/s)`,
  );
  const over = (bytes) => (bytes - limit) / MiB;
  for (const [name, runs] of Object.entries(results)) {
    const detected = runs.map((r) => over(r.detected));
    const left = runs.map((r) => over(r.left));
    const asMs = (mib) => `${Math.round((mib * MiB) / rate)} ms`;
    const reasons = runs.map((r) => `${r.reason}/${r.status}`).join(' ');
    console.log(
      `   ${name}: at the decision ${median(detected).toFixed(0)} MiB over (max ${Math.max(...detected).toFixed(0)}, ${asMs(Math.max(...detected))} of writing); left after the stop ${median(left).toFixed(0)} MiB over (max ${Math.max(...left).toFixed(0)}, ${asMs(Math.max(...left))}); ${reasons}`,
    );
  }
  return { hostWriteBytesPerMs: rate, limit, results };
}

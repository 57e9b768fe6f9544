// Section 4: 16 sessions launched at once (`sh -c "sleep 0.5"` each): exit codes, one ledger
// line each with a reason and peaks, containers and parent cgroups left, the launchers' peak RSS.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { bin, median, ms, now, started, tag } from './common.mjs';
import { base, env, flags, ledgerLines, makeRoot, plainWorkspace } from './fixture.mjs';

/**
 * The peak memory of each pid, sampled every `everyMs` until stopped, in kB: RSS (VmHWM, the
 * kernel's own peak) and private memory (Private_Clean + Private_Dirty of smaps_rollup, the
 * largest sample). RSS counts node's text, which every node process shares (about 36 MB here);
 * private memory is what one more launcher costs. For each: the largest, the median, the sum.
 */
export function sampleRss(pids, everyMs = 50) {
  const peaks = new Map();
  const privates = new Map();
  const field = (text, name) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(text)?.[1] ?? 0);
  const timer = setInterval(() => {
    for (const pid of pids) {
      try {
        peaks.set(pid, Math.max(peaks.get(pid) ?? 0, field(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmHWM')));
        const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
        privates.set(pid, Math.max(privates.get(pid) ?? 0, field(rollup, 'Private_Clean') + field(rollup, 'Private_Dirty')));
      } catch {
        // exited
      }
    }
  }, everyMs);
  const figures = (m) => ({
    maxKb: Math.max(0, ...m.values()),
    medianKb: m.size ? median([...m.values()]) : 0,
    sumKb: [...m.values()].reduce((a, b) => a + b, 0),
  });
  return () => (clearInterval(timer), { ...figures(peaks), private: figures(privates) });
}

/** Containers of this bench whose name starts with `prefix` (agent-sandbox-<prefix>...). */
export function containersLeft(prefix) {
  const out = spawnSync('podman', ['--runtime', 'runc', 'ps', '-aq', '--filter', `name=agent-sandbox-${prefix}`]).stdout.toString();
  return out.trim().split('\n').filter(Boolean).length;
}

export async function concurrent() {
  const root = makeRoot('s4');
  const ledger = path.join(base, 'state', 'concurrent.jsonl');
  const ids = Array.from({ length: 16 }, (_, i) => `${tag}-c${String(i).padStart(2, '0')}`);
  for (const id of ids) plainWorkspace(root, id);
  const t0 = now();
  // The shim is `#!/usr/bin/env node`: env execs node in place, so the child's pid is the launcher's.
  const sessions = ids.map((id) => ({
    id,
    ...started(bin('agent-sandbox'), ['run', ...flags(root, id, ledger), '--agent-bin', 'sh', '--', '-c', 'sleep 0.5'], { env }),
  }));
  const stopRss = sampleRss(sessions.map((s) => s.child.pid));
  const done = await Promise.all(sessions.map(async (s) => ({ id: s.id, ...(await s.done) })));
  const peakKb = stopRss().maxKb;
  const total = now() - t0;
  const lines = ledgerLines(ledger);
  const ok = done.filter((d) => d.code === 0).length;
  const attributed = ids.filter((id) =>
    lines.some((l) => l.sessionId === id && l.outcome === 'ran' && l.reason === 'exited' && l.peak),
  ).length;
  const left = containersLeft(`${tag}-c`);
  const cgroupsLeft = ids.filter(
    (id) => existsSync(`/sys/fs/cgroup/memory/agent-sandbox/${id}`) || existsSync(`/sys/fs/cgroup/agent-sandbox/${id}`),
  ).length;
  const walls = done.map((d) => d.wall);
  const failures = done.filter((d) => d.code !== 0).map((d) => ({ id: d.id, code: d.code, stderr: d.stderr.slice(-500) }));
  console.log('\n4. 16 sessions at once (sh -c "sleep 0.5" each)');
  console.log(
    `   succeeded ${ok}/16, attributed ${attributed}/16, ledger lines ${lines.length}, containers left ${left}, parent cgroups left ${cgroupsLeft}`,
  );
  console.log(`   all done in ${ms(total)}; per session median ${ms(median(walls))}, max ${ms(Math.max(...walls))}`);
  console.log(`   launcher peak RSS (VmHWM sampled every 50 ms, max over the 16): ${(peakKb / 1024).toFixed(1)} MiB`);
  for (const f of failures) console.log(`   FAILED ${f.id} exit ${f.code}: ${f.stderr.trim().split('\n').pop()}`);
  return {
    total,
    sessionMedian: median(walls),
    ok,
    attributed,
    ledgerLines: lines.length,
    containersLeft: left,
    cgroupsLeft,
    launcherPeakRssKb: peakKb,
    failures,
  };
}

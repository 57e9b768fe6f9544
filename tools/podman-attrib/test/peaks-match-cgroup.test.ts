// Peaks reported after the container is gone, against what the container's own
// cgroup recorded while it existed (read from inside, as its last act).
import t from 'tap';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { containerName, tempDir } from '@agent-sandbox/testkit';
import { runAttributedSession } from '../dist/index.js';
import { busybox, hardening, sessionId } from './fixtures/session-kit.js';

/** allocate `mib` MiB in tmpfs, hold `procs` sleeping processes, burn CPU, then write our own cgroup's counters. */
function workload(mib: number, procs: number, loops: number): string {
  return [
    `dd if=/dev/zero of=/work/blob bs=1M count=${mib} 2>/dev/null`,
    `for i in $(seq 1 ${procs}); do sleep 3 & done`,
    `i=0; while [ $i -lt ${loops} ]; do i=$((i+1)); done`,
    'cd /sys/fs/cgroup',
    'echo $(cat memory/memory.max_usage_in_bytes pids/pids.peak cpuacct/cpuacct.usage) > /out/own',
  ].join('; ');
}

async function measure(t: any, label: string, mib: number, procs: number, loops: number) {
  const dir = await tempDir(t, 'podman-attrib-peak-');
  const { attribution } = await runAttributedSession({
    sessionId: sessionId(t, label),
    containerName: containerName(t, label),
    runArgs: [...hardening, '--memory=512m', '--tmpfs', '/work:size=300m', '-v', `${dir}:/out`, busybox, 'sh', '-c', workload(mib, procs, loops)],
    stdio: 'ignore',
  });
  const [memory, pids, cpuNs] = readFileSync(path.join(dir, 'own'), 'utf8').trim().split(/\s+/).map(Number);
  return { peak: attribution.peak, own: { memoryBytes: memory!, pids: pids!, cpuSeconds: cpuNs! / 1e9 }, attribution };
}

function within(t: any, what: string, got: number | null, want: number, fraction: number) {
  t.ok(got !== null && Math.abs(got - want) <= want * fraction, `${what}: reported ${got}, the cgroup recorded ${want} (within ${fraction * 100}%)`);
}

const rows = [
  { label: 'mid', mib: 64, procs: 20, loops: 600_000 },
  { label: 'big', mib: 160, procs: 60, loops: 900_000 },
];
let ran = 0;
for (const row of rows) {
  t.test(`peaks of a ${row.mib} MiB, ${row.procs}-process workload are within 10% of the container cgroup's own counters`, async (t) => {
    const { peak, own, attribution } = await measure(t, row.label, row.mib, row.procs, row.loops);
    t.equal(attribution.reason, 'exited');
    t.ok(own.memoryBytes >= row.mib * 1024 * 1024, 'the workload really allocated its size');
    t.ok(own.pids >= row.procs, 'the workload really spawned its processes');
    within(t, 'memory', peak.memoryBytes, own.memoryBytes, 0.1);
    within(t, 'pids', peak.pids, own.pids, 0.1);
    // The container's own cpuacct was read just before it exited; ours also has the exit and runc teardown.
    within(t, 'cpu', peak.cpuSeconds, own.cpuSeconds, 0.1);
    ran += 1;
  });
}

t.test('a tiny workload is off only by a fixed setup overhead (conmon and runc), bounded in absolute terms', async (t) => {
  const { peak, own } = await measure(t, 'tiny', 1, 0, 1000);
  t.ok(peak.memoryBytes !== null && Math.abs(peak.memoryBytes - own.memoryBytes) <= 10 * 1024 * 1024, `memory ${peak.memoryBytes} vs ${own.memoryBytes}: within 10 MiB`);
  t.ok(peak.pids !== null && Math.abs(peak.pids - own.pids) <= 5, `pids ${peak.pids} vs ${own.pids}: within 5 tasks`);
  ran += 1;
});

t.test('every row ran', async (t) => t.equal(ran, rows.length + 1));

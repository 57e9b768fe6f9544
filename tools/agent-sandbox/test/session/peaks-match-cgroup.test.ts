// The peaks in a session's ledger line, read after the container is gone, against what the
// container's own cgroup recorded while it existed (read from inside by the agent, as its
// last act): the launcher's sampler and the parent cgroup's counters report what really ran.
import t, { type Test } from 'tap';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { cgroupMode } from '@agent-sandbox/shared';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ images: ['localhost/agent-sandbox:latest'] });

const v2 = cgroupMode() === 'v2';

/** Allocate `mib` MiB in the container's tmpfs, hold `procs` sleeping processes, burn CPU, then write the own cgroup's counters. */
function workload(mib: number, procs: number, loops: number): string {
  const own = v2
    ? 'cd /sys/fs/cgroup; echo $(cat memory.peak 2>/dev/null || cat memory.current) $(cat pids.peak 2>/dev/null || cat pids.current) $(sed -n "s/^usage_usec //p" cpu.stat)000'
    : 'cd /sys/fs/cgroup; echo $(cat memory/memory.max_usage_in_bytes pids/pids.peak cpuacct/cpuacct.usage)';
  return [
    'w=$PWD',
    `dd if=/dev/zero of=/tmp/blob bs=1M count=${mib} 2>/dev/null`,
    `for i in $(seq 1 ${procs}); do sleep 3 & done`,
    `i=0; while [ $i -lt ${loops} ]; do i=$((i+1)); done`,
    `${own} > "$w/.own"`,
  ].join('; ');
}

function within(t: Test, what: string, got: number | null, want: number, fraction: number) {
  t.ok(
    got !== null && Math.abs(got - want) <= want * fraction,
    `${what}: the ledger says ${got}, the container's cgroup recorded ${want} (within ${fraction * 100}%)`,
  );
}

const rows = [
  { label: 'mid', mib: 64, procs: 20, loops: 600_000 },
  { label: 'big', mib: 160, procs: 60, loops: 900_000 },
];

for (const row of rows) {
  t.test(
    `peaks of a ${row.mib} MiB, ${row.procs}-process workload are within 10% of the container cgroup's own counters`,
    requirements,
    async (t) => {
      const fx = await sessionFixture(t, `peak-${row.label}`);
      const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
      const out = await fx.run(
        [
          'run',
          ...flags,
          '--image',
          'localhost/agent-sandbox:latest',
          '--memory',
          '512m',
          '--agent-bin',
          '/bin/sh',
          '--',
          '-c',
          workload(row.mib, row.procs, row.loops),
        ],
        { timeoutMs: 180_000 },
      );
      t.equal(out.exitCode, 0, out.stderr);
      const [memory, pids, cpuNs] = readFileSync(path.join(fx.workspace, '.own'), 'utf8').trim().split(/\s+/).map(Number);
      const [line] = fx.ledgerLines();
      t.equal(line.reason, 'exited');
      t.ok(memory! >= row.mib * 1024 * 1024, 'the workload really allocated its size');
      t.ok(pids! >= row.procs, 'the workload really spawned its processes');
      within(t, 'memory', line.peak.memoryBytes, memory!, 0.1);
      within(t, 'pids', line.peak.pids, pids!, 0.1);
      // The container's own counter was read just before it exited; ours also has the exit and runc teardown.
      within(t, 'cpu', line.peak.cpuSeconds, cpuNs! / 1e9, 0.15);
    },
  );
}

// Each row is one way a real container ends, run through runAttributedSession
// (podman run --rm under our parent cgroup); the reason must be the true one,
// and nothing may be left behind.
import t from 'tap';
import { containerName, imageExists } from '@agent-sandbox/testkit';
import { runPodman } from '@agent-sandbox/shared/podman';
import { validateDocument } from '@agent-sandbox/shared';
import { PodmanAttribOutput } from '@agent-sandbox/shared/schemas/podman-attrib';
import { runAttributedSession } from '../dist/index.js';
import { cgroupMode } from '@agent-sandbox/shared';
import { busybox, hardening, leftovers, literal, nothingLeft, rootful, sessionId } from './fixtures/session-kit.js';

// Where each end is read from: the kernel log when it is readable (root), else the counters
// (v2: the parent's memory.events counts its descendants' OOM kills; a rejected fork is counted
// in the container's own cgroup, watched while it runs). On v1 rootless is refused altogether.
const v2 = cgroupMode() === 'v2';
/** The parent's path as the kernel names it (evidence.kernelLog.match), literally. */
const parentOf = (out: any) => literal(out.evidence.kernelLog.match);

interface Row {
  claim: string;
  label: string;
  args: string[];
  /** Runs beside the session (e.g. kills the container from outside). */
  meanwhile?: (name: string) => Promise<void>;
  exitCode: number;
  reason: string;
  check: (t: any, out: any) => void;
}

async function untilRunning(name: string): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    const out = await runPodman(['ps', '--filter', `name=^${name}$`, '--filter', 'status=running', '--format', '{{.Names}}']);
    if (out.stdout.trim() === name) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} never ran`);
}

const rows: Row[] = [
  {
    claim: 'a memory bomb is oom-killed with exit 137, from the kernel OOM line for our cgroup (root) or the parent\'s memory.events (rootless)',
    label: 'oom',
    args: ['--memory=32m', '--memory-swap=32m', busybox, 'sh', '-c', 'a=x; while true; do a="$a$a"; done'],
    exitCode: 137,
    reason: 'oom-killed',
    check: (t, out) => {
      if (rootful) {
        t.match(out.evidence.basis, new RegExp(`^kernel log: oom-kill:.*oom_memcg=${parentOf(out)}/libpod-[0-9a-f]{64}`));
        t.equal(out.evidence.kernelLog.oomKills.length, 1, 'exactly one oom-kill line names our cgroup');
      } else {
        t.equal(out.evidence.kernelLog.state, 'unreadable', 'rootless: the kernel log is not ours to read');
        t.match(out.evidence.basis, /^cgroup counter memory\.events:oom_kill = [1-9]/);
      }
      if (v2) {
        t.ok(out.evidence.cgroup.counters['memory.peak'] >= 32 * 1024 * 1024, 'the parent kept the peak at the limit');
        t.ok(out.evidence.cgroup.counters['memory.events:oom_kill'] >= 1, 'measured: the v2 parent counts its descendants\' kill');
      } else {
        t.ok(out.evidence.cgroup.counters['memory.max_usage_in_bytes'] >= 32 * 1024 * 1024, 'the parent kept the peak at the limit');
        t.equal(out.evidence.cgroup.counters['memory.oom_control:oom_kill'], 0, 'measured: the v1 parent does not count the kill');
      }
    },
  },
  {
    claim: 'a fork bomb under a pids limit is pids-limit, from the kernel line naming our cgroup (root) or the container\'s own pids.events (rootless)',
    label: 'forkbomb',
    args: ['--pids-limit=32', busybox, 'sh', '-c', 'f() { f | f & }; f; sleep 2'],
    exitCode: 0,
    reason: 'pids-limit',
    check: (t, out) => {
      if (rootful) t.match(out.evidence.basis, new RegExp(`^kernel log: cgroup: fork rejected by pids controller in ${parentOf(out)}/libpod-`));
      else t.match(out.evidence.basis, /^cgroup counter pids\.events:max = [1-9]\d* in the container's own cgroup/);
      t.ok(out.peak.pids >= 30 && out.peak.pids <= 33, `peak pids ${out.peak.pids} is at the limit 32`);
    },
  },
  {
    claim: 'a pids-limit hit is reported even when the agent survived it and exited 0',
    label: 'survivor',
    args: ['--pids-limit=16', busybox, 'sh', '-c', '(for i in $(seq 1 40); do sleep 1 & done; wait) 2>/dev/null; exit 0'],
    exitCode: 0,
    reason: 'pids-limit',
    check: (t, out) => {
      if (rootful) t.equal(out.evidence.kernelLog.pidsRejections.length, 1);
      else t.ok(out.evidence.cgroup.counters['descendants/pids.events:max'] >= 1, 'the container\'s own pids.events counted the rejected forks');
    },
  },
  {
    claim: '`exit 3` is exited with 3',
    label: 'exit3',
    args: [busybox, 'sh', '-c', 'exit 3'],
    exitCode: 3,
    reason: 'exited',
    check: (t, out) => {
      t.equal(out.evidence.basis, 'exit status 3');
      t.match(out.evidence.eventLog.events.find((e: any) => e.status === 'died'), { status: 'died', time: String, containerExitCode: 3 }, 'the event log has died with 3');
    },
  },
  {
    claim: 'a command that itself returns 127 after running is exited, not start-failed (the event log shows it died)',
    label: 'own127',
    args: [busybox, 'sh', '-c', 'echo "Error: pretend" >&2; exit 127'],
    exitCode: 127,
    reason: 'exited',
    check: (t, out) => t.equal(out.evidence.basis, 'exit status 127'),
  },
  {
    claim: 'a container killed from outside with SIGKILL is signal',
    label: 'sigkill',
    args: [busybox, 'sleep', '30'],
    meanwhile: async (name) => {
      await untilRunning(name);
      await runPodman(['kill', '--signal', 'KILL', name]);
    },
    exitCode: 137,
    reason: 'signal',
    check: (t, out) => {
      t.equal(out.evidence.exit.signal, 'SIGKILL');
      t.same(out.evidence.kernelLog.oomKills, [], 'no OOM line: the signal came from outside');
    },
  },
  {
    claim: 'a plan with a missing command is start-failed, with podman\'s error as evidence',
    label: 'nocmd',
    args: [busybox, '/no/such/command'],
    exitCode: 127,
    reason: 'start-failed',
    check: (t, out) => {
      // runc says "no such file or directory", crun "No such file or directory".
      t.match(out.evidence.basis, /podman status 127 with Error: .*no such file or directory/i);
      t.notOk(out.evidence.eventLog.events.some((e: any) => e.status === 'start' || e.status === 'died'), 'the event log has no start');
    },
  },
];

t.before(async () => {
  if (!(await imageExists(busybox))) throw new Error(`${busybox} is missing: run bash image/build-all.sh`);
});

let ran = 0;
for (const row of rows) {
  t.test(row.claim, async (t) => {
    const id = sessionId(t, row.label);
    const name = containerName(t, row.label);
    const session = runAttributedSession({ sessionId: id, containerName: name, runArgs: [...hardening, ...row.args], stdio: 'ignore' });
    await row.meanwhile?.(name);
    const { attribution: out, leftover } = await session;
    t.doesNotThrow(() => validateDocument(PodmanAttribOutput, out, 'output'), 'the output matches the podman-attrib.output schema');
    t.equal(out.exitCode, row.exitCode, 'the exit status is passed through unchanged');
    t.equal(out.reason, row.reason);
    row.check(t, out);
    t.same(leftover, []);
    t.same(await leftovers(id, name), nothingLeft, 'no container, cgroup or cidfile is left');
    ran += 1;
  });
}

t.test('every row ran', async (t) => t.equal(ran, rows.length));

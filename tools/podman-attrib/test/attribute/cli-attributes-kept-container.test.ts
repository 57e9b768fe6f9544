// The executable, for shell callers: {"container"} names an exited container
// that still exists (no --rm); inspect + event log + kernel log decide.
import t from 'tap';
import { cgroupMode, validateDocument } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { PodmanAttribOutput } from '@agent-sandbox/shared/validators/podman-attrib';
import { containerName, runBin } from '@agent-sandbox/testkit';
import { sessionParent } from '../../dist/cgroup/session-parent.js';
import { busybox, hardening, sessionId } from '../fixtures/session-kit.js';

interface Row {
  claim: string;
  label: string;
  /** Makes the container (named `name`); returns nothing. */
  make: (name: string, t: any) => Promise<void>;
  exitCode: number;
  reason: string;
  check?: (t: any, out: any) => void;
}

const run = (name: string, args: string[]) => runPodman(['run', '--name', name, ...hardening, ...args], { expect: 'any' });

const rows: Row[] = [
  {
    claim: 'an exited container is attributed exited with its status; its peaks are null because its shared parent holds no trace',
    label: 'cli-exit',
    make: async (name) => void (await run(name, [busybox, 'sh', '-c', 'exit 3'])),
    exitCode: 3,
    reason: 'exited',
    check: (t, out) => {
      t.same(out.peak, { memoryBytes: null, pids: null, cpuSeconds: null });
      t.match(out.evidence.cgroup.error, /no peaks/);
      t.equal(out.evidence.inspect.status, 'exited');
    },
  },
  {
    claim: 'a memory bomb kept after exit is oom-killed from the kernel line naming its libpod-<id>, although inspect says OOMKilled false',
    label: 'cli-oom',
    make: async (name) =>
      void (await run(name, ['--memory=32m', '--memory-swap=32m', busybox, 'sh', '-c', 'a=x; while true; do a="$a$a"; done'])),
    exitCode: 137,
    reason: 'oom-killed',
    check: (t, out) => {
      if (cgroupMode() !== 'v2') t.equal(out.evidence.inspect.oomKilled, false, 'measured: inspect does not know (runc, cgroup v1)');
      t.match(out.evidence.basis, new RegExp(`oom_memcg=[^,]*libpod-${out.containerId}`));
    },
  },
  {
    claim: "a fork bomb run under a session parent is pids-limit, with the parent's peaks",
    label: 'cli-pids',
    make: async (name, t) => {
      // In this host's form: a path with cgroupfs, a slice with systemd.
      const parent = sessionParent(sessionId(t, 'cli-pids')).podmanArg;
      await run(name, [
        `--cgroup-parent=${parent}`,
        '--pids-limit=24',
        busybox,
        'sh',
        '-c',
        '(for i in $(seq 1 40); do sleep 1 & done; wait) 2>/dev/null; exit 0',
      ]);
    },
    exitCode: 0,
    reason: 'pids-limit',
    check: (t, out) => {
      t.ok(out.peak.pids >= 22 && out.peak.pids <= 25, `peak pids ${out.peak.pids} at the limit 24`);
      t.ok(out.peak.memoryBytes > 0 && out.peak.cpuSeconds > 0, 'memory and cpu peaks are read from the parent');
    },
  },
  {
    claim: 'a container whose start failed (created, never started) is start-failed',
    label: 'cli-nostart',
    make: async (name) => {
      await runPodman(['create', '--name', name, ...hardening, busybox, '/no/such/command']);
      const start = await runPodman(['start', name], { expect: 'any' });
      if (start.exitCode === 0) throw new Error('the start should have failed');
    },
    exitCode: 0,
    reason: 'start-failed',
    check: (t, out) => t.match(out.evidence.basis, /never ran/),
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, async (t) => {
    const name = containerName(t, row.label);
    await row.make(name, t);
    const out = await runBin('podman-attrib', ['--container', name]);
    t.equal(out.exitCode, 0, out.stderr);
    t.doesNotThrow(() => validateDocument(PodmanAttribOutput, out.json, 'output'), 'stdout matches the schema');
    t.equal(out.json.exitCode, row.exitCode);
    t.equal(out.json.reason, row.reason, out.json.evidence?.basis);
    t.equal(out.json.evidence.eventLog.state, 'read');
    row.check?.(t, out.json);
    ran += 1;
  });
}
t.test('every row ran', async (t) => t.equal(ran, rows.length));

t.test('the JSON input on stdin works the same as the flag', async (t) => {
  const name = containerName(t, 'cli-stdin');
  await run(name, [busybox, 'true']);
  const out = await runBin('podman-attrib', [], { input: { container: name } });
  t.equal(out.exitCode, 0);
  t.equal(out.json.reason, 'exited');
});

t.test('an unknown container is refused with 80 no-such-container', async (t) => {
  const out = await runBin('podman-attrib', ['--container', 'astest-no-such-container-xyz']);
  t.equal(out.exitCode, 80);
  t.equal(out.json.error.code, 'no-such-container');
});

t.test('a running container is refused with 80 container-running', async (t) => {
  const name = containerName(t, 'cli-running');
  await runPodman(['run', '-d', '--name', name, ...hardening, busybox, 'sleep', '30']);
  const out = await runBin('podman-attrib', ['--container', name]);
  t.equal(out.exitCode, 80);
  t.equal(out.json.error.code, 'container-running');
});

t.test('an unknown field is refused with 80 naming it', async (t) => {
  const out = await runBin('podman-attrib', [], { input: { container: 'x', extra: 1 } });
  t.equal(out.exitCode, 80);
  t.match(out.json.error.message, /input\.extra: unknown field/);
});

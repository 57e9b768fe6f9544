// The contained command's exit status passes through unchanged; env values travel by
// name; the container is gone after every run, after SIGTERM/SIGINT to sandbox-run, and
// after hooks.beforeRemove when the plan keeps it.
import t from 'tap';
import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import { runBin, containerName, binPath, testCgroupParent } from '@agent-sandbox/testkit';
import { cgroupMode } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { runPlan } from '../dist/index.js';

const busybox = 'localhost/agent-sandbox-busybox:latest';
const limits = { memory: '256m', memorySwap: '256m', pids: 64, cpus: 1, cpuShares: 256 };

async function exists(name: string): Promise<boolean> {
  return (await runPodman(['container', 'exists', name], { expect: 'any' })).exitCode === 0;
}

const statuses = [0, 1, 3, 42, 79, 80, 91, 126, 127, 200, 255];
let ran = 0;
for (const status of statuses) {
  t.test(`exit ${status} of the contained command is sandbox-run's exit, unchanged`, async (t) => {
    const name = containerName(t, `exit${status}`);
    const out = await runBin('sandbox-run', [], {
      input: { image: busybox, sessionId: 'x', name, limits, command: ['sh', '-c', `exit ${status}`] },
    });
    t.equal(out.exitCode, status, out.stderr);
    t.equal(out.stdout, '', 'sandbox-run adds nothing to stdout');
    t.notOk(await exists(name), 'the container is gone');
    ran += 1;
  });
}
t.test('every status row ran', async (t) => t.equal(ran, statuses.length));

t.test('stdout and stderr belong to the command; env values pass by name and never appear in the argv', async (t) => {
  const name = containerName(t, 'stdio');
  const canary = `canary-${Date.now()}`;
  const plan = {
    image: busybox,
    sessionId: 'x',
    name,
    limits,
    env: ['ASTEST_VALUE'],
    command: ['sh', '-c', 'echo "out:$ASTEST_VALUE"; echo err >&2; exit 5'],
  };
  const dry = await runBin('sandbox-run', ['--dry-run'], { input: plan, env: { ...process.env, ASTEST_VALUE: canary } });
  t.notOk(dry.stdout.includes(canary), 'the value is not in the argv');
  const out = await runBin('sandbox-run', [], { input: plan, env: { ...process.env, ASTEST_VALUE: canary } });
  t.equal(out.exitCode, 5);
  t.equal(out.stdout, `out:${canary}\n`);
  t.match(out.stderr, /^err$/m);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal} to sandbox-run stops and removes the container, then exits`, async (t) => {
    const name = containerName(t, `sig${signal.toLowerCase()}`);
    const child = execa(binPath('sandbox-run'), [], {
      input: JSON.stringify({ image: busybox, sessionId: 'x', name, limits, command: ['sleep', '300'] }),
      reject: false,
      // execa would SIGKILL sandbox-run 5 s after SIGTERM; this test is about what sandbox-run does.
      forceKillAfterDelay: false,
      timeout: 60_000,
    });
    for (let i = 0; i < 100 && !(await exists(name)); i += 1) await new Promise((r) => setTimeout(r, 100));
    t.ok(await exists(name), 'the container was running');
    const t0 = Date.now();
    child.kill(signal);
    const result = await child;
    t.notOk(await exists(name), 'the container is gone');
    // sleep as PID 1 ignores the stop signal, so the grace period ends in SIGKILL: status 137.
    t.equal(result.exitCode, 137, String(result.stderr));
    t.ok(Date.now() - t0 < 10_000, `ended in ${Date.now() - t0} ms`);
  });
}

t.test('runPlan with remove:false calls beforeRemove while the container exists, then removes it', async (t) => {
  const name = containerName(t, 'keep');
  let seen: { containerName: string; exitCode: number; existed: boolean; status: string } | undefined;
  const outcome = await runPlan(
    { image: busybox, sessionId: 'x', name, limits, remove: false, command: ['sh', '-c', 'exit 7'] },
    {
      stdio: 'ignore',
      beforeRemove: async (info) => {
        const state = await runPodman(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', info.containerName], {
          expect: 'any',
        });
        seen = { ...info, existed: await exists(info.containerName), status: state.stdout.trim() };
      },
    },
  );
  t.equal(outcome.exitCode, 7);
  t.equal(outcome.containerName, name);
  t.ok(Date.parse(outcome.startedAt) <= Date.parse(outcome.endedAt));
  t.same(seen, { containerName: name, exitCode: 7, existed: true, status: 'exited 7' });
  t.notOk(await exists(name), 'removed after the hook');
});

t.test('a plan with a cgroupParent runs under it', async (t) => {
  const name = containerName(t, 'cgparent');
  const parent = testCgroupParent(t, 'sr');
  const out = await runBin('sandbox-run', [], {
    input: { image: busybox, sessionId: 'x', name, limits, cgroupParent: parent.arg, command: ['cat', '/proc/self/cgroup'] },
  });
  t.equal(out.exitCode, 0, out.stderr);
  if (cgroupMode() === 'v2') {
    // A private cgroup namespace hides the path inside ("0::/"); the parent outlives the
    // container and its counters hold what ran in it.
    const usage = Number(/^usage_usec (\d+)$/m.exec(await readFile(`${parent.dir('cpu')}/cpu.stat`, 'utf8'))?.[1] ?? 0);
    t.ok(usage > 0, `the parent ${parent.relPath} counted the container's CPU time (${usage} us)`);
  } else {
    t.match(out.stdout, new RegExp(`pids:${parent.relPath}/libpod-[0-9a-f]{64}`));
  }
});

// --dry-run prints the exact podman argv for a plan and starts nothing.
import t from 'tap';
import path from 'node:path';
import { runBin, containerName, leakedContainers, repoRoot } from '@agent-sandbox/testkit';
import { podmanBinary } from '@agent-sandbox/shared/podman';
import { buildRunArgv, defaultLimits, type RunFacts } from '../dist/index.js';

const busybox = 'localhost/agent-sandbox-busybox:latest';
const limits = { memory: '512m', memorySwap: '1g', pids: 64, cpus: 0.5, cpuShares: 256 };
const profile = path.join(repoRoot, 'tools/sandbox-run/seccomp/agent-sandbox.json');
const rootfulV1: RunFacts = {
  podman: 'podman',
  cgroupMode: 'hybrid',
  runtime: 'runc',
  rootless: false,
  ulimits: { nofile: 4096, nproc: 4096 },
  seccompProfile: profile,
};

t.test(
  'the dry-run argv is exactly the hardening flags (the seccomp profile beside the tool included), the limits, the mounts and the command',
  async (t) => {
    const name = containerName(t, 'dry');
    const plan = {
      image: busybox,
      sessionId: 's1',
      name,
      mounts: [
        { source: '/tmp', destination: '/sandbox/workspaces/s1', readOnly: false },
        { source: '/etc/hostname', destination: '/sandbox-secrets/codex/auth.json', readOnly: true },
      ],
      limits,
      env: ['TERM', 'OPENAI_BASE_URL'],
      command: ['sh', '-c', 'echo "$1"', 'x', '--not-a-podman-flag'],
      workdir: '/sandbox/workspaces/s1',
    };
    const out = await runBin('sandbox-run', ['--dry-run'], { input: plan });
    t.equal(out.exitCode, 0, out.stderr);
    t.same(out.json, {
      ok: true,
      argv: [
        podmanBinary,
        '--runtime',
        'runc',
        'run',
        '--rm',
        '--name',
        name,
        '--pull=never',
        '--interactive',
        '--cap-drop=ALL',
        '--security-opt=no-new-privileges',
        `--security-opt=seccomp=${profile}`,
        '--network=none',
        '--pids-limit=64',
        '--memory=536870912',
        '--memory-swap=1073741824',
        '--cpus=0.5',
        '--cpu-shares=256',
        '--ulimit=nofile=4096:4096',
        '--ulimit=nproc=4096:4096',
        '--log-driver=none',
        '--user=1000:1000',
        '--read-only',
        '--read-only-tmpfs=true',
        '--workdir=/sandbox/workspaces/s1',
        '--env=TERM',
        '--env=OPENAI_BASE_URL',
        '--mount=type=bind,source=/tmp,destination=/sandbox/workspaces/s1',
        '--mount=type=bind,source=/etc/hostname,destination=/sandbox-secrets/codex/auth.json,ro=true',
        '--',
        busybox,
        'sh',
        '-c',
        'echo "$1"',
        'x',
        '--not-a-podman-flag',
      ],
    });
    t.same(await leakedContainers().then((l) => l.filter((n) => n === name)), [], 'no container was created');
  },
);

t.test('flags and a command after -- make the same plan as stdin', async (t) => {
  const out = await runBin('sandbox-run', [
    '--dry-run',
    '--image',
    busybox,
    '--session-id',
    'flags1',
    '--limits',
    JSON.stringify(limits),
    '--network',
    'ns:/run/netns/astest',
    '--tty',
    '--cgroup-parent',
    '/astest/parent',
    '--',
    'id',
    '-u',
  ]);
  t.equal(out.exitCode, 0, out.stderr);
  const argv: string[] = out.json.argv;
  t.ok(argv.includes('--name') && argv[argv.indexOf('--name') + 1] === 'agent-sandbox-flags1', 'default name is agent-sandbox-<sessionId>');
  t.ok(argv.includes('--network=ns:/run/netns/astest'), 'a named network namespace is passed');
  t.ok(argv.includes('--tty'), 'tty');
  t.ok(argv.includes('--cgroup-parent=/astest/parent'), 'cgroup parent');
  t.same(argv.slice(-3), [busybox, 'id', '-u'], 'the command follows the image');
});

t.test("the ulimits never exceed the caller's hard limits", async (t) => {
  // prlimit lowers the hard limits of the process that runs sandbox-run.
  const out = await runBin('sandbox-run', ['--dry-run'], { input: { image: busybox, sessionId: 'ul', limits } });
  t.equal(out.exitCode, 0);
  const { execa } = await import('execa');
  const low = await execa('prlimit', ['--nofile=1000:1000', '--nproc=900:900', 'node', 'tools/sandbox-run/bin/sandbox-run', '--dry-run'], {
    input: JSON.stringify({ image: busybox, sessionId: 'ul', limits }),
    reject: false,
    cwd: new URL('../../..', import.meta.url).pathname,
  });
  t.equal(low.exitCode, 0, String(low.stderr));
  const argv: string[] = JSON.parse(String(low.stdout)).argv;
  t.ok(argv.includes('--ulimit=nofile=1000:1000'), 'nofile follows the hard limit');
  t.ok(argv.includes('--ulimit=nproc=900:900'), 'nproc follows the hard limit');
});

t.test('every argv carries the seccomp profile preflight checked, as one absolute path', async (t) => {
  const plan = { image: busybox, sessionId: 'sc', limits: defaultLimits };
  for (const facts of [rootfulV1, { ...rootfulV1, cgroupMode: 'v2' as const, runtime: undefined, rootless: true }]) {
    const argv = buildRunArgv(plan, facts);
    t.same(
      argv.filter((a) => a.includes('seccomp')),
      [`--security-opt=seccomp=${profile}`],
      `${facts.rootless ? 'rootless' : 'rootful'}: one seccomp flag, the checked file`,
    );
  }
  const out = await runBin('sandbox-run', ['--dry-run'], { input: plan });
  t.equal(out.exitCode, 0, out.stderr);
  t.same(
    out.json.argv.filter((a: string) => a.includes('seccomp')),
    [`--security-opt=seccomp=${profile}`],
    'the real preflight finds the committed profile from the installed tool',
  );
});

t.test('a rootless caller gets --userns=keep-id; a rootful one does not', async (t) => {
  const plan = { image: busybox, sessionId: 'r1', limits: defaultLimits };
  t.ok(buildRunArgv(plan, { ...rootfulV1, cgroupMode: 'v2', runtime: undefined, rootless: true }).includes('--userns=keep-id'));
  t.notOk(buildRunArgv(plan, rootfulV1).some((a) => a.startsWith('--userns')));
  t.notOk(
    buildRunArgv(plan, { ...rootfulV1, cgroupMode: 'v2', runtime: undefined }).includes('--runtime'),
    'no runtime named: none is passed',
  );
});

t.test(
  'on a systemd host podman is told its cgroup manager and the runtime, before the subcommand; on cgroupfs neither flag',
  async (t) => {
    const plan = { image: busybox, sessionId: 'sd', limits: defaultLimits, cgroupParent: 'agent_sandbox-s\\x2dd.slice' };
    const argv = buildRunArgv(plan, { ...rootfulV1, cgroupMode: 'v2', runtime: 'crun', cgroupManager: 'systemd' });
    t.same(argv.slice(0, 5), ['podman', '--runtime', 'crun', '--cgroup-manager=systemd', 'run']);
    t.ok(argv.includes('--cgroup-parent=agent_sandbox-s\\x2dd.slice'), "a slice with systemd's \\x2d escape is accepted");
    t.notOk(buildRunArgv(plan, { ...rootfulV1, cgroupManager: 'cgroupfs' }).some((a) => a.startsWith('--cgroup-manager')));
  },
);

t.test('the default limits are the ones measured from real agent sessions (README: rule and figures)', async (t) => {
  t.same(defaultLimits, { memory: '4g', memorySwap: '4g', pids: 512, cpus: 2, cpuShares: 512 });
  const argv = buildRunArgv({ image: busybox, sessionId: 'd', limits: defaultLimits }, rootfulV1);
  t.ok(argv.includes(`--memory=${4 * 1024 ** 3}`) && argv.includes('--pids-limit=512') && argv.includes('--cpus=2'));
});

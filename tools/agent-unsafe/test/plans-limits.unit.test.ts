// Which limit mechanism the hatch picks and the exact argv it builds. The
// systemd-run branch cannot run here (no user manager), so its deps are a
// stand-in; the prlimit branch is proved for real in
// hatch-starts-agent-when-containment-broken.test.ts.
import t from 'tap';
import { isToolError } from '@agent-sandbox/shared';
import { defaultLimits, openHatch, parseSystemdVersion, planLimits, fakeHost, type LimitDeps } from '../dist/index.js';

function deps(over: Partial<LimitDeps> = {}): LimitDeps {
  return {
    uid: 1000,
    which: (name) => `/usr/bin/${name}`,
    userManagerPresent: () => true,
    systemdVersion: () => 256,
    countUserProcesses: () => 40,
    ...over,
  };
}

t.test('with a user manager (stand-in) the agent runs in its own scope in unsafe.slice with MemoryMax and TasksMax', async (t) => {
  const plan = planLimits('/usr/bin/codex', ['exec', '$HOME'], defaultLimits, deps());
  t.equal(plan?.mechanism, 'systemd-run');
  t.same(plan?.argv, [
    '/usr/bin/systemd-run',
    '--user',
    '--scope',
    '--slice=unsafe.slice',
    '--quiet',
    '--collect',
    '--expand-environment=no',
    '-p',
    `MemoryMax=${12 * 1024 ** 3}`,
    '-p',
    'TasksMax=512',
    '--',
    '/usr/bin/codex',
    'exec',
    '$HOME',
  ]);
});

t.test('systemd 252 gets no --expand-environment (the option does not exist before 254)', async (t) => {
  const plan = planLimits('/usr/bin/codex', [], defaultLimits, deps({ systemdVersion: () => 252 }));
  t.notOk(plan?.argv.includes('--expand-environment=no'));
  t.equal(plan?.mechanism, 'systemd-run');
});

t.test('without a user manager prlimit launches the agent with nproc = existing + tasks and RLIMIT_AS', async (t) => {
  const plan = planLimits('/usr/bin/claude', ['-p', 'x'], defaultLimits, deps({ userManagerPresent: () => false }));
  t.equal(plan?.mechanism, 'prlimit');
  t.same(plan?.argv, ['/usr/bin/prlimit', '--nproc=552', `--as=${16 * 1024 ** 3}`, '--', '/usr/bin/claude', '-p', 'x']);
  t.match(plan?.notes.join('\n'), /no systemd user manager here/);
  t.notMatch(plan?.notes.join('\n'), /you are root/, 'the root caveat is only for root');
});

t.test('as root the banner says RLIMIT_NPROC is not enforced', async (t) => {
  const plan = planLimits('/usr/bin/claude', [], defaultLimits, deps({ uid: 0, userManagerPresent: () => false }));
  t.match(plan?.notes.join('\n'), /you are root: the kernel does not enforce RLIMIT_NPROC/);
});

t.test('a user manager without systemd-run on PATH falls to prlimit, not to no limits', async (t) => {
  const plan = planLimits('/usr/bin/codex', [], defaultLimits, deps({ which: (n) => (n === 'systemd-run' ? undefined : `/usr/bin/${n}`) }));
  t.equal(plan?.mechanism, 'prlimit');
});

t.test('with neither mechanism the hatch refuses (88) instead of running unlimited', async (t) => {
  const launched: string[][] = [];
  let caught: unknown;
  try {
    await openHatch(
      { runtime: 'codex', args: [] },
      {
        env: {},
        stdinIsTTY: true,
        stdoutIsTTY: true,
        host: fakeHost({}),
        parentPid: 0,
        limitDeps: deps({ userManagerPresent: () => false, which: (n) => (n === 'codex' ? '/usr/bin/codex' : undefined) }),
        log: () => {},
        launch: async (argv) => (launched.push(argv), 0),
      },
    );
  } catch (err) {
    caught = err;
  }
  t.ok(isToolError(caught, 'no-limit-mechanism'), String(caught));
  t.equal((caught as { exitCode?: number }).exitCode, 88);
  t.same(launched, [], 'nothing was launched');
});

t.test('systemd --version is parsed', async (t) => {
  t.equal(parseSystemdVersion('systemd 252 (252.39-1~deb12u1)\n+PAM +AUDIT'), 252);
  t.equal(parseSystemdVersion('nonsense'), undefined);
});

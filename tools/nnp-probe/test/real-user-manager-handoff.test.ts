// The handoff through the REAL `systemd-run --user` of a live user manager (the VM tier runs
// this as uid 1000 with linger in its systemd guest; elsewhere it is skipped, saying why):
// NoNewPrivs 0 runs directly; under `setpriv --no-new-privs` the command runs in a transient
// unit of the user's manager with NoNewPrivs 0, its status passes through exactly, a `$`
// survives, a second handoff from inside is refused (90); no bus is 84; systemd-run itself
// failing (a real one, pointed at a bus that does not exist) is 89. As root on a systemd host:
// a user without linger gets 84 naming `loginctl enable-linger`.
import t from 'tap';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { execa } from 'execa';
import { cgroupManager } from '@agent-sandbox/shared';
import { binPath } from '@agent-sandbox/testkit';

const nnp = binPath('nnp-probe');
const { uid, username } = userInfo();
const systemdHost = cgroupManager() === 'systemd';
const bus = `/run/user/${uid}/bus`;
const liveManager =
  uid !== 0 && systemdHost && existsSync(`/var/lib/systemd/linger/${username}`) && existsSync(bus)
    ? false
    : `needs a live systemd user manager (PID 1 systemd, a non-root user with linger, ${bus}): the VM tier runs this as uid 1000`;

/** The environment a user's own shell has: its runtime directory and bus. */
const userEnv = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: userInfo().homedir,
  XDG_RUNTIME_DIR: `/run/user/${uid}`,
  DBUS_SESSION_BUS_ADDRESS: `unix:path=${bus}`,
};
const report = "grep '^NoNewPrivs:' /proc/self/status; grep -o 'agent-sandbox-nnp-[0-9a-f]*\\.service' /proc/self/cgroup || echo no-unit";

function exec(nnpFlag: boolean, command: string[], env: Record<string, string> = userEnv) {
  const argv = [nnp, 'exec', '--', ...command];
  return execa(nnpFlag ? 'setpriv' : argv[0]!, nnpFlag ? ['--no-new-privs', ...argv] : argv.slice(1), {
    env,
    extendEnv: false,
    reject: false,
    timeout: 300_000,
    cwd: '/',
  });
}

t.test('NoNewPrivs 0: exec runs the command directly, in no handoff unit', { skip: liveManager }, async (t) => {
  const out = await exec(false, ['sh', '-c', report]);
  t.equal(out.exitCode, 0, String(out.stderr));
  t.match(out.stdout, /^NoNewPrivs:\s+0$/m);
  t.match(out.stdout, /^no-unit$/m, 'not in a transient unit');
});

t.test(
  'NoNewPrivs 1: exec hands off through the real systemd-run --user; the command runs in the unit with NoNewPrivs 0',
  { skip: liveManager },
  async (t) => {
    const out = await exec(true, ['sh', '-c', report]);
    t.equal(out.exitCode, 0, String(out.stderr));
    t.match(out.stdout, /^NoNewPrivs:\s+0$/m, "the user manager's unit does not inherit NoNewPrivs");
    t.match(out.stdout, /^agent-sandbox-nnp-[0-9a-f]{16}\.service$/m, 'the command ran in the handoff unit');
  },
);

const statuses: { claim: string; command: string[]; status: number }[] = [
  { claim: 'exit 0', command: ['true'], status: 0 },
  { claim: 'exit 1 (systemd-run also exits 1 for itself)', command: ['sh', '-c', 'exit 1'], status: 1 },
  { claim: 'exit 42', command: ['sh', '-c', 'exit 42'], status: 42 },
  { claim: "exit 89 (our own code for a failed systemd-run, here the command's)", command: ['sh', '-c', 'exit 89'], status: 89 },
  { claim: 'death by SIGKILL (137)', command: ['sh', '-c', 'kill -9 $$'], status: 137 },
  { claim: 'exit 255', command: ['sh', '-c', 'exit 255'], status: 255 },
  { claim: 'a command not found (127)', command: ['no-such-command-astest'], status: 127 },
];
t.test("through the real handoff, the command's status is exec's status, exactly", { skip: liveManager }, async (t) => {
  let ran = 0;
  for (const row of statuses) {
    const out = await exec(true, row.command);
    t.equal(out.exitCode, row.status, `${row.claim}: ${String(out.stderr).trim().split('\n').pop() ?? ''}`);
    t.notMatch(String(out.stderr), /"ok":false/, `${row.claim}: no tool error`);
    ran += 1;
  }
  t.equal(ran, statuses.length, 'every row ran');
});

t.test('a $ in an argument reaches the command unchanged through the real handoff', { skip: liveManager }, async (t) => {
  const args = ['a$b', '$$', '${HOME}', '$', 'x$(id)'];
  const out = await exec(true, ['printf', '%s|', ...args]);
  t.equal(out.exitCode, 0, String(out.stderr));
  t.equal(out.stdout, `${args.join('|')}|`);
});

t.test('a handoff asked from inside a handoff unit with NoNewPrivs 1 again is refused with 90', { skip: liveManager }, async (t) => {
  const out = await exec(true, ['setpriv', '--no-new-privs', nnp, 'exec', '--', 'true']);
  t.equal(out.exitCode, 90, String(out.stderr));
  t.match(String(out.stdout), /"code":"handoff-recursion"/, 'the JSON document on stdout names the refusal');
});

t.test(
  'with no user bus where the runtime directory should be, NoNewPrivs 1 is 84 naming loginctl enable-linger',
  { skip: liveManager },
  async (t) => {
    const out = await exec(true, ['true'], { ...userEnv, XDG_RUNTIME_DIR: `/tmp/astest-no-runtime-${randomBytes(4).toString('hex')}` });
    t.equal(out.exitCode, 84, String(out.stderr));
    t.match(String(out.stdout), /"code":"user-manager-missing"/, 'the JSON document on stdout names the refusal');
    t.match(String(out.stderr), /loginctl enable-linger/);
  },
);

t.test(
  "when the real systemd-run fails itself (its bus address leads nowhere), exec is 89, not the command's status",
  { skip: liveManager },
  async (t) => {
    const out = await exec(true, ['true'], { ...userEnv, DBUS_SESSION_BUS_ADDRESS: `unix:path=/run/user/${uid}/astest-no-such-bus` });
    t.equal(out.exitCode, 89, String(out.stderr));
    t.match(String(out.stdout), /"code":"systemd-run-failed"/, 'the JSON document on stdout names the refusal');
    t.match(String(out.stderr), /Failed to connect to bus|No such file or directory/, "systemd-run's own message reaches stderr");
  },
);

const rootWithLogind = uid === 0 && systemdHost ? false : 'needs root on a systemd host (makes a user without linger)';
t.test(
  'a user without linger (no user manager, no bus) under NoNewPrivs gets 84 naming loginctl enable-linger',
  { skip: rootWithLogind },
  async (t) => {
    const user = `astnl${randomBytes(3).toString('hex')}`;
    const add = await execa('useradd', ['--create-home', '--shell', '/bin/sh', user], { reject: false });
    t.equal(add.exitCode, 0, add.stderr);
    t.teardown(async () => {
      await execa('userdel', ['--remove', '--force', user], { reject: false });
    });
    const userUid = Number((await execa('id', ['-u', user])).stdout);
    t.notOk(existsSync(`/var/lib/systemd/linger/${user}`), 'no linger flag for the new user');
    const env = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', XDG_RUNTIME_DIR: `/run/user/${userUid}` };
    const out = await execa('runuser', ['-u', user, '--', 'setpriv', '--no-new-privs', nnp, 'exec', '--', 'true'], {
      env,
      extendEnv: false,
      reject: false,
      timeout: 300_000,
      cwd: '/',
    });
    t.notOk(out.failed && out.exitCode === undefined, `runuser ran (${out.shortMessage ?? ''})`);
    t.equal(out.exitCode, 84, String(out.stderr));
    t.match(String(out.stderr), /linger is off/);
    t.match(String(out.stderr), new RegExp(`loginctl enable-linger ${user}`));
  },
);

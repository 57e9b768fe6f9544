// `agent-sandbox doctor`: one readiness report from the run path's own preflight; exit 0 only
// when a session would start, otherwise the exit of the first failing required check.
import t from 'tap';
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { cgroupManager, cgroupMode, ociRuntime, validateDocument } from '@agent-sandbox/shared';
import { DoctorReport } from '@agent-sandbox/shared/validators/agent-sandbox';
import { binPath } from '@agent-sandbox/testkit';
import { sessionFixture } from './fixtures/session-fixture.js';

// The session image (the VM tier's guest carries this one, not the agents image).
const image = 'localhost/agent-sandbox:latest';

const names = [
  'not inside a session',
  'host',
  'podman',
  'cgroup limits enforceable and an OCI runtime',
  'rootless subuids',
  'NoNewPrivs and user manager',
  'image present',
  "podman's storage writable",
  'ledger writable',
  'root',
  'workspaces',
  'credential codex',
  'credential claude',
  'credential cursor-agent',
  'kernel log (attribution on cgroup v1)',
];

t.test('a ready node reports every check ok and exits 0', async (t) => {
  const fx = await sessionFixture(t, 'doctor');
  const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root, '--image', image]);
  t.equal(out.exitCode, 0, out.stdout);
  validateDocument(DoctorReport, out.json, 'doctor');
  t.same(out.json.checks.map((c: { name: string }) => c.name), names, 'every check, in order');
  t.ok(out.json.checks.filter((c: { required: boolean }) => c.required).every((c: { ok: boolean }) => c.ok));
});

t.test("the host's lines say what this host is: cgroup version and manager, runtime, root or rootless, kernel log", async (t) => {
  const fx = await sessionFixture(t, 'doctorhost');
  const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root, '--image', image]);
  t.equal(out.exitCode, 0, out.stdout);
  const line = (name: string) => out.json.checks.find((c: { name: string }) => c.name === name);
  const mode = cgroupMode();
  const rootful = process.geteuid?.() === 0;
  t.equal(
    line('cgroup limits enforceable and an OCI runtime').detail,
    `cgroup ${mode} (${cgroupManager()} manager), runtime ${ociRuntime(mode)}, podman-${rootful ? 'rootful' : 'rootless'}`,
    'the cgroup line names what podman will be told',
  );
  t.equal(line('rootless subuids').detail, rootful ? 'not needed (root)' : 'present');
  const kernelLog = line('kernel log (attribution on cgroup v1)');
  if (mode === 'v2') t.match(kernelLog, { ok: true, detail: 'not needed (cgroup v2 counters)' }, 'v2: attribution reads the counters');
  else if (rootful) t.match(kernelLog, { ok: true, detail: 'readable' }, 'v1 as root: the kernel log is readable');
  else t.match(kernelLog, { ok: false, detail: 'no-kernel-log' }, 'v1 rootless: the kernel log is not ours');
});

t.test('a missing credential is a failing line with the exact remedy, and exit 85', async (t) => {
  const fx = await sessionFixture(t, 'doctor85');
  await rm(`${fx.home}/.codex/auth.json`);
  const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root, '--image', image]);
  t.equal(out.exitCode, 85);
  const line = out.json.checks.find((c: { name: string }) => c.name === 'credential codex');
  t.match(line, { ok: false, exitCode: 85, remedy: /codex login/ });
});

// With a user manager for this user (the VM tier's uid 1000 has linger) NoNewPrivs hands off instead.
const userManager = existsSync(`/run/user/${process.getuid?.() ?? 0}/bus`);
t.test('the human report names the remedy under NoNewPrivs: loginctl enable-linger, exit 84', { skip: userManager ? 'this user has a user manager: NoNewPrivs 1 hands off instead of refusing' : false }, async (t) => {
  const fx = await sessionFixture(t, 'doctor84');
  const out = await execa('setpriv', ['--no-new-privs', binPath('agent-sandbox'), 'doctor', '--runtime', 'codex', '--root', fx.root, '--image', image], { env: fx.env, extendEnv: false, reject: false });
  t.equal(out.exitCode, 84);
  t.match(out.stderr, /FAIL NoNewPrivs and user manager: .*loginctl enable-linger/);
  t.match(out.stderr, /a session would NOT start here/);
  t.equal(out.stdout, '', 'the human report is on stderr');
});

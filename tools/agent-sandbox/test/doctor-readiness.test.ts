// `agent-sandbox doctor`: one readiness report from the run path's own preflight; exit 0 only
// when a session would start, otherwise the exit of the first failing required check.
import t from 'tap';
import { execa } from 'execa';
import { rm } from 'node:fs/promises';
import { validateDocument } from '@agent-sandbox/shared';
import { DoctorReport } from '@agent-sandbox/shared/validators/agent-sandbox';
import { binPath } from '@agent-sandbox/testkit';
import { sessionFixture } from './fixtures/session-fixture.js';

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
  const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root]);
  t.equal(out.exitCode, 0, out.stdout);
  validateDocument(DoctorReport, out.json, 'doctor');
  t.same(out.json.checks.map((c: { name: string }) => c.name), names, 'every check, in order');
  t.ok(out.json.checks.filter((c: { required: boolean }) => c.required).every((c: { ok: boolean }) => c.ok));
});

t.test('a missing credential is a failing line with the exact remedy, and exit 85', async (t) => {
  const fx = await sessionFixture(t, 'doctor85');
  await rm(`${fx.home}/.codex/auth.json`);
  const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root]);
  t.equal(out.exitCode, 85);
  const line = out.json.checks.find((c: { name: string }) => c.name === 'credential codex');
  t.match(line, { ok: false, exitCode: 85, remedy: /codex login/ });
});

t.test('the human report names the remedy under NoNewPrivs: loginctl enable-linger, exit 84', async (t) => {
  const fx = await sessionFixture(t, 'doctor84');
  const out = await execa('setpriv', ['--no-new-privs', binPath('agent-sandbox'), 'doctor', '--runtime', 'codex', '--root', fx.root], { env: fx.env, extendEnv: false, reject: false });
  t.equal(out.exitCode, 84);
  t.match(out.stderr, /FAIL NoNewPrivs and user manager: .*loginctl enable-linger/);
  t.match(out.stderr, /a session would NOT start here/);
  t.equal(out.stdout, '', 'the human report is on stderr');
});

// `agent-sandbox doctor`: one readiness report from the run path's own preflight; exit 0 only
// when a session would start, otherwise the exit of the first failing required check. What the
// host's lines should say is read here from the host itself (/proc/self/mountinfo, `podman
// info`, a container started with the runtime doctor names, dmesg), not from the shared
// functions doctor itself uses.
import t from 'tap';
import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { validateDocument } from '@agent-sandbox/shared';
import { podmanBinary, podmanEnv } from '@agent-sandbox/shared/podman';
import { DoctorReport } from '@agent-sandbox/shared/validators/agent-sandbox-reports';
import { binPath, busyboxImage, hardeningFlags } from '@agent-sandbox/testkit';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ images: ['localhost/agent-sandbox:latest', 'localhost/agent-sandbox-busybox:latest'] });

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

/** The cgroup layout as mounted: cgroup2 at /sys/fs/cgroup is v2; v1 hierarchies beside a cgroup2 mount are hybrid. */
function mountedCgroups(): 'v1' | 'v2' | 'hybrid' {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [pre = '', post = ''] = line.split(' - ');
      return { point: pre.split(' ')[4], fstype: post.split(' ')[0] };
    });
  if (mounts.some((m) => m.point === '/sys/fs/cgroup' && m.fstype === 'cgroup2')) return 'v2';
  return mounts.some((m) => m.fstype === 'cgroup2') ? 'hybrid' : 'v1';
}

t.test('a ready node reports every check ok and exits 0', requirements, async (t) => {
  const fx = await sessionFixture(t, 'doctor');
  const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root, '--image', image]);
  t.equal(out.exitCode, 0, out.stdout);
  validateDocument(DoctorReport, out.json, 'doctor');
  t.same(
    out.json.checks.map((c: { name: string }) => c.name),
    names,
    'every check, in order',
  );
  t.ok(out.json.checks.filter((c: { required: boolean }) => c.required).every((c: { ok: boolean }) => c.ok));
});

t.test(
  "the host's lines say what this host is: cgroup version and manager, runtime, root or rootless, kernel log",
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'doctorhost');
    const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root, '--image', image]);
    t.equal(out.exitCode, 0, out.stdout);
    const line = (name: string) => out.json.checks.find((c: { name: string }) => c.name === name);
    const mode = mountedCgroups();
    // podman itself, without the global arguments our code would add (they name the runtime and manager).
    const podman = (args: string[]) =>
      execa(podmanBinary, args, { env: podmanEnv(process.env), extendEnv: false, reject: false, cwd: '/', timeout: 300_000 });
    const info = JSON.parse(String((await podman(['info', '--format', 'json'])).stdout)).host;
    t.equal(info.cgroupVersion, mode === 'v2' ? 'v2' : 'v1', `podman agrees with the mount table: cgroup ${mode}`);
    const rootful = Number((await execa('id', ['-u'])).stdout) === 0;
    const detail = /^cgroup (\S+) \((\S+) manager\), runtime (\S+), podman-(rootful|rootless)$/.exec(
      line('cgroup limits enforceable and an OCI runtime').detail,
    );
    t.ok(detail, `the cgroup line has its form: ${line('cgroup limits enforceable and an OCI runtime').detail}`);
    const [said, manager, runtime, who] = (detail ?? []).slice(1);
    t.equal(said, mode, 'the cgroup version is the mounted one');
    t.equal(manager, info.cgroupManager, "the manager is podman's own");
    t.equal(who, rootful ? 'rootful' : 'rootless', 'root or rootless as id -u says');
    if (mode === 'v2') t.equal(runtime, info.ociRuntime.name, "on v2 the runtime is podman's own pick");
    const started = await podman(['--runtime', runtime!, 'run', '--rm', ...hardeningFlags, busyboxImage, 'true']);
    t.equal(
      started.exitCode,
      0,
      `a container starts here with the runtime doctor names (${runtime})${started.exitCode === 0 ? '' : `: ${String(started.stderr).trim().slice(-300)}`}`,
    );
    t.equal(line('rootless subuids').detail, rootful ? 'not needed (root)' : 'present');
    const kernelLog = line('kernel log (attribution on cgroup v1)');
    const dmesg = await execa('dmesg', [], { reject: false });
    if (mode === 'v2') t.match(kernelLog, { ok: true, detail: 'not needed (cgroup v2 counters)' }, 'v2: attribution reads the counters');
    else if (dmesg.exitCode === 0)
      t.match(kernelLog, { ok: true, detail: 'readable' }, 'v1, and dmesg reads the kernel log here: readable');
    else
      t.match(kernelLog, { ok: false, detail: 'no-kernel-log' }, `v1, and dmesg cannot read the kernel log here (${dmesg.stderr.trim()})`);
  },
);

t.test('a missing credential is a failing line with the exact remedy, and exit 85', requirements, async (t) => {
  const fx = await sessionFixture(t, 'doctor85');
  await rm(`${fx.home}/.codex/auth.json`);
  const out = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', fx.root, '--image', image]);
  t.equal(out.exitCode, 85);
  const line = out.json.checks.find((c: { name: string }) => c.name === 'credential codex');
  t.match(line, { ok: false, exitCode: 85, remedy: /codex login/ });
});

// With a user manager for this user (the VM tier's uid 1000 has linger) NoNewPrivs hands off instead.
const userManager = existsSync(`/run/user/${process.getuid?.() ?? 0}/bus`);
t.test(
  'the human report names the remedy under NoNewPrivs: loginctl enable-linger, exit 84',
  { skip: userManager ? 'this user has a user manager: NoNewPrivs 1 hands off instead of refusing' : requirements.skip },
  async (t) => {
    const fx = await sessionFixture(t, 'doctor84');
    const out = await execa(
      'setpriv',
      ['--no-new-privs', binPath('agent-sandbox'), 'doctor', '--runtime', 'codex', '--root', fx.root, '--image', image],
      { env: fx.env, extendEnv: false, reject: false },
    );
    t.equal(out.exitCode, 84);
    t.match(out.stderr, /FAIL NoNewPrivs and user manager: .*loginctl enable-linger/);
    t.match(out.stderr, /a session would NOT start here/);
    t.equal(out.stdout, '', 'the human report is on stderr');
  },
);

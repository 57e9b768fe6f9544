// A rootless launcher started with NoNewPrivs 1 (setpriv --no-new-privs, as a CI runner or a
// hardened service manager starts it) cannot run the setuid newuidmap rootless podman needs;
// with a systemd user manager for the user it hands the same command to `systemd-run --user`,
// and the session runs there: the agent's status passes through exactly, one ledger line says
// it ran rootless, nothing is left. Runs where a user manager is live for a non-root user (the
// VM tier's uid 1000, which has linger); elsewhere it is a skip naming what is missing.
import t from 'tap';
import { execa } from 'execa';
import { binPath, needs } from '@agent-sandbox/testkit';
import { nothingLeft, sessionFixture } from '../fixtures/session-fixture.js';

const rootless = process.geteuid?.() !== 0;
const skip = rootless
  ? needs({ userManager: true, cgroup: 'v2', commands: ['setpriv', 'systemd-run'] })
  : { skip: 'needs a non-root user (rootless podman is what needs the handoff)' };

t.test(
  'NoNewPrivs 1: the launcher hands off through systemd-run --user and the session runs rootless, its status exact',
  skip,
  async (t) => {
    const fx = await sessionFixture(t, 'nnp');
    const uid = process.getuid?.() ?? 1000;
    const env = { ...fx.env, XDG_RUNTIME_DIR: `/run/user/${uid}`, DBUS_SESSION_BUS_ADDRESS: `unix:path=/run/user/${uid}/bus` };
    const out = await execa(
      'setpriv',
      [
        '--no-new-privs',
        binPath('agent-sandbox'),
        'run',
        '--verbose',
        ...fx.flags,
        '--image',
        'localhost/agent-sandbox:latest',
        '--',
        ...fx.agentArgs(7),
      ],
      {
        env,
        extendEnv: false,
        reject: false,
        timeout: 600_000,
      },
    );
    t.equal(
      out.exitCode,
      7,
      `the agent's status 7 passes through the handoff (stderr: ${String(out.stderr).trim().split('\n').slice(-3).join(' | ')})`,
    );
    t.match(String(out.stderr), /NoNewPrivs is 1; handing off through systemd-run --user/, 'the launcher says it handed off');
    t.ok(fx.ranInWorkspace(), 'the stub agent ran inside the container');
    t.notOk(fx.ranOnHost(), 'and not on the host');
    const lines = fx.ledgerLines();
    t.equal(lines.length, 1, 'one ledger line, written by the launcher inside the handoff unit');
    t.match(lines[0], { outcome: 'ran', exitCode: 7, reason: 'exited', containment: 'podman-rootless' });
    t.same(await fx.leftovers(), nothingLeft, 'no container, staged copy, record or cgroup is left');
  },
);

t.test(
  'NoNewPrivs 1: doctor says the session would start through the handoff, and checks the host as the unit will run',
  skip,
  async (t) => {
    const fx = await sessionFixture(t, 'nnpdoctor');
    const uid = process.getuid?.() ?? 1000;
    const env = { ...fx.env, XDG_RUNTIME_DIR: `/run/user/${uid}`, DBUS_SESSION_BUS_ADDRESS: `unix:path=/run/user/${uid}/bus` };
    const out = await execa(
      'setpriv',
      [
        '--no-new-privs',
        binPath('agent-sandbox'),
        'doctor',
        '--json',
        '--runtime',
        'codex',
        '--root',
        fx.root,
        '--image',
        'localhost/agent-sandbox:latest',
      ],
      {
        env,
        extendEnv: false,
        reject: false,
        timeout: 600_000,
      },
    );
    t.equal(out.exitCode, 0, String(out.stdout));
    const report = JSON.parse(String(out.stdout));
    const line = (name: string) => report.checks.find((c: { name: string }) => c.name === name);
    t.match(line('NoNewPrivs and user manager'), { ok: true, detail: 'NoNewPrivs 1, handoff through systemd-run --user' });
    t.match(
      line('cgroup limits enforceable and an OCI runtime'),
      { ok: true, detail: /podman-rootless$/ },
      'the runtime check is the one the unit passes (NoNewPrivs 0 there)',
    );
  },
);

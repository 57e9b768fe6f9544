// One row per line of the spec's error table: each refusal has its own exit code, names its
// cause on stderr, writes a ledger line, and no agent process ran anywhere: the stub agent's
// workspace marker is absent and its host marker (a /tmp path that only a host run could
// create) never appears.
import t from 'tap';
import { execa } from 'execa';
import { chown, mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { binPath } from '@agent-sandbox/testkit';
import { sessionNeeds, sessionFixture, type SessionFixture } from './fixtures/session-fixture.js';
import { nothingLeft } from './fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
// root: its rows run the launcher as uid 1000 through setpriv --reuid.
const requirements = sessionNeeds({
  root: true,
  images: ['localhost/agent-sandbox-agents:latest', 'localhost/agent-sandbox-busybox:latest'],
});

interface Row {
  claim: string;
  exitCode: number;
  code: string;
  /** Pattern the stderr message must match (names the cause). */
  message: RegExp;
  /** Builds the situation; returns extra flags, env, and a command prefix. */
  setup: (fx: SessionFixture) => Promise<{ flags?: string[]; env?: Record<string, string>; prefix?: string[]; asUser?: boolean }>;
}

/** A port on 127.0.0.1 with nothing listening (bound, then closed). */
async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const rows: Row[] = [
  {
    claim: 'a malformed limit is a usage error (80) naming the flag',
    exitCode: 80,
    code: 'invalid-field',
    message: /--memory: expected a size such as 512m/,
    setup: async () => ({ flags: ['--memory', 'lots'] }),
  },
  {
    claim: 'a registry host whose sshd is dead is unreachable (81)',
    exitCode: 81,
    code: 'no-host-answers',
    message: /no agent-seat host answers: seat1: 127\.0\.0\.1:\d+ ECONNREFUSED/,
    setup: async (fx) => {
      const registry = path.join(fx.base, 'hosts.json');
      const ssh = {
        address: '127.0.0.1',
        port: await deadPort(),
        user: 'root',
        hostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDeadDeadDeadDeadDeadDeadDeadDeadDeadDeadDeadDead',
        identityFile: '/nonexistent/key',
      };
      await writeFile(
        registry,
        JSON.stringify({ version: 1, hosts: [{ name: 'seat1', roles: ['agent-seat'], machineId: 'f'.repeat(32), ssh }] }),
      );
      return { flags: ['--hosts', registry] };
    },
  },
  {
    claim: 'an absent image is refused (82) naming the image',
    exitCode: 82,
    code: 'image-absent',
    message: /image localhost\/astest-absent:none is not in podman's local storage/,
    setup: async () => ({ flags: ['--image', 'localhost/astest-absent:none'] }),
  },
  {
    claim: 'a container that fails to start is refused (83): podman exits 125 (name in use)',
    exitCode: 83,
    code: 'podman-run-failed',
    message: /did not start: podman run exited 125/,
    setup: async (fx) => {
      // A container already holding the session's name makes podman run fail before the command starts.
      await runPodman(['create', '--name', `agent-sandbox-${fx.id}`, 'localhost/agent-sandbox-busybox:latest', 'true']);
      return {};
    },
  },
  {
    claim: 'NoNewPrivs 1 without a user manager is refused (84) naming loginctl enable-linger',
    exitCode: 84,
    code: 'user-manager-missing',
    message: /loginctl enable-linger/,
    setup: async () => ({ prefix: ['setpriv', '--no-new-privs'] }),
  },
  {
    claim: 'a missing credential file is refused (85) naming the file',
    exitCode: 85,
    code: 'not-found',
    message: /codex credential file .*\.codex\/auth\.json does not exist/,
    setup: async (fx) => {
      const { rm } = await import('node:fs/promises');
      await rm(path.join(fx.home, '.codex', 'auth.json'));
      return {};
    },
  },
  {
    claim: 'a workspace outside the permitted root is refused (86)',
    exitCode: 86,
    code: 'outside-root',
    message: /outside/,
    setup: async (fx) => {
      const outside = path.join(fx.base, 'elsewhere');
      await mkdir(outside);
      return { flags: ['--workspace', outside] };
    },
  },
  {
    claim: 'git metadata that cannot be mounted at the same absolute path is refused (87)',
    exitCode: 87,
    code: 'gitdir-not-found',
    message: /gitdir .* does not exist/,
    setup: async (fx) => {
      await writeFile(path.join(fx.workspace, '.git'), 'gitdir: /nonexistent/astest/repo/.git/worktrees/w\n');
      return {};
    },
  },
  {
    claim: 'rootless on cgroup v1 is refused (88): limits would be ignored',
    exitCode: 88,
    code: 'rootless-cgroup-v1',
    message: /rootless podman \(uid 1000\) on cgroup .* ignores --memory/,
    setup: async (fx) => {
      await chown(fx.base, 1000, 1000);
      await chown(fx.home, 1000, 1000);
      await chown(path.join(fx.home, '.codex'), 1000, 1000);
      await chown(path.join(fx.home, '.codex', 'auth.json'), 1000, 1000);
      // env -u: tap's process tracking (NODE_OPTIONS) would write into the repo as uid 1000.
      return { prefix: ['setpriv', '--reuid', '1000', '--regid', '1000', '--clear-groups', 'env', '-u', 'NODE_OPTIONS'], asUser: true };
    },
  },
  {
    claim: 'a launcher inside a session is refused by policy (90): recursion',
    exitCode: 90,
    code: 'recursion',
    message: /already inside agent-sandbox session/,
    setup: async () => ({ env: { AGENT_SANDBOX_SESSION: 'outer-session' } }),
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, requirements, async (t) => {
    const fx = await sessionFixture(t, `row${row.exitCode}`);
    const extra = await row.setup(fx);
    const flags = [...fx.flags];
    for (let i = 0; i < (extra.flags ?? []).length; i += 2) {
      const at = flags.indexOf(extra.flags![i]!);
      if (at >= 0) flags.splice(at, 2);
      flags.push(extra.flags![i]!, extra.flags![i + 1]!);
    }
    const [cmd, ...pre] = [...(extra.prefix ?? []), binPath('agent-sandbox')];
    const out = await execa(cmd!, [...pre, 'run', ...flags, '--', ...fx.agentArgs(0)], {
      env: { ...fx.env, ...(extra.env ?? {}) },
      extendEnv: false,
      reject: false,
      cwd: fx.base,
      timeout: 120_000,
    });
    t.equal(out.exitCode, row.exitCode, `exit code (stderr: ${out.stderr})`);
    t.match(out.stderr, row.message, 'stderr names the cause');
    t.equal(out.stdout, '', 'nothing on stdout: it belongs to the agent');
    const lines = fx.ledgerLines();
    t.equal(lines.length, 1, 'one ledger line');
    t.match(lines[0], { outcome: 'refused', exitCode: row.exitCode, reason: row.code });
    t.same(fx.result(), lines[0], '--result-file carries the same verdict');
    t.equal(fx.ranInWorkspace(), undefined, 'the agent did not run in a container');
    t.notOk(fx.ranOnHost(), 'the agent did not run on the host');
    // Row 83's own container (made by the test to hold the name) is the test's, removed at teardown.
    const ours = row.code === 'podman-run-failed' ? [`agent-sandbox-${fx.id}`] : [];
    t.same(
      await fx.leftovers(),
      { ...nothingLeft, containers: ours },
      'nothing is left: no staged or installed credential copy, no lock or record, no container, no cgroup',
    );
    ran += 1;
  });
}

t.test('every row of the error table ran', requirements, async (t) => {
  t.equal(ran, rows.length);
  t.same(
    rows.map((r) => r.exitCode),
    [80, 81, 82, 83, 84, 85, 86, 87, 88, 90],
    "rows 80..88 and 90 (89 is nnp-probe's handoff exit, unreachable without a user manager)",
  );
});

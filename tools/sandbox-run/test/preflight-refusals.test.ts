// The preflight fails closed before anything starts: image absent 82, no runtime 83,
// a missing mount source 86, limits this host cannot enforce 88 (for real: a throwaway
// rootless user on this cgroup v1 host). Other hosts, described through the probe:
// preflight-reads-the-host.test.ts.
import t from 'tap';
import { needs } from '@agent-sandbox/testkit';
import { execa } from 'execa';
import { appendFile, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { runBin, tempDir, repoRoot, binPath } from '@agent-sandbox/testkit';
import { preflight } from '../dist/index.js';

const busybox = 'localhost/agent-sandbox-busybox:latest';
const limits = { memory: '512m', memorySwap: '512m', pids: 64, cpus: 1, cpuShares: 256 };

async function podmanPs(): Promise<string> {
  return String((await execa('podman', ['ps', '-a', '--format', '{{.Names}}'])).stdout);
}

t.test('an image that does not exist exits 82 and starts nothing', async (t) => {
  const sessionId = `absent-${randomBytes(4).toString('hex')}`;
  const image = `localhost/astest-no-such-image-${randomBytes(4).toString('hex')}:latest`;
  const out = await runBin('sandbox-run', [], { input: { image, sessionId, limits, command: ['true'] } });
  t.equal(out.exitCode, 82, out.stderr);
  t.equal(out.json.error.code, 'image-absent');
  t.match(out.json.error.message, image);
  t.notOk((await podmanPs()).includes(`agent-sandbox-${sessionId}`), 'no container of that name exists');
});

t.test('a mount source that does not exist exits 86 and creates nothing', async (t) => {
  const dir = await tempDir(t, 'sandbox-run-src-');
  const out = await runBin('sandbox-run', [], {
    input: {
      image: busybox,
      sessionId: 'nosrc',
      limits,
      mounts: [{ source: `${dir}/missing`, destination: '/w', readOnly: false }],
      command: ['true'],
    },
  });
  t.equal(out.exitCode, 86, out.stderr);
  t.equal(out.json.error.code, 'mount-source-missing');
  t.match(out.json.error.message, /^input\.mounts\[0\]\.source/);
  t.notOk(existsSync(`${dir}/missing`), 'the source was not created');
});

t.test('no podman in the system directories exits 83 naming podman', needs({ root: true }), async (t) => {
  // Hide the real podman in a private mount namespace: /dev/null bound over it is not executable.
  const out = await execa(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      'mount --bind /dev/null "$(command -v podman)" && exec "$@"',
      'sh',
      binPath('sandbox-run'),
    ],
    {
      input: JSON.stringify({ image: busybox, sessionId: 'nopodman', limits, command: ['true'] }),
      reject: false,
    },
  );
  t.equal(out.exitCode, 83, String(out.stderr));
  t.equal(JSON.parse(String(out.stdout)).error.code, 'podman-missing');
});

t.test('a podman put first on PATH is never the one that runs', async (t) => {
  const bin = await tempDir(t, 'sandbox-run-path-');
  const marker = `${bin}/fake-podman-ran`;
  await writeFile(`${bin}/podman`, `#!/bin/sh\ntouch ${marker}\nexit 0\n`, { mode: 0o755 });
  await symlink(process.execPath, `${bin}/node`);
  // A containers.conf that swaps runc for the fake: if CONTAINERS_CONF reached podman, it would run.
  await writeFile(`${bin}/containers.conf`, `[engine.runtimes]\nrunc = ["${bin}/podman"]\n`);
  const out = await runBin('sandbox-run', ['--dry-run'], {
    input: { image: busybox, sessionId: 'fakepath', limits, command: ['true'] },
    env: { PATH: `${bin}:/usr/bin:/bin`, AGENT_SANDBOX_PODMAN: `${bin}/podman` },
  });
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.json.argv[0], /^\/(usr\/)?(local\/)?s?bin\/podman$/, 'podman comes from the system directories');
  const real = await runBin('sandbox-run', [], {
    input: { image: busybox, sessionId: `fakepath-${randomBytes(3).toString('hex')}`, limits, command: ['true'] },
    env: { PATH: `${bin}:/usr/bin:/bin`, AGENT_SANDBOX_PODMAN: `${bin}/podman`, CONTAINERS_CONF: `${bin}/containers.conf` },
  });
  t.equal(real.exitCode, 0, real.stderr);
  t.notOk(existsSync(marker), 'the fake podman never ran');
});

// ---- the real rootless refusal: a throwaway user with subordinate ids ----
t.test(
  'rootless podman on this cgroup v1 host is refused with 88 before podman runs (a real user)',
  needs({ root: true, cgroup: 'v1' }),
  async (t) => {
    const user = `astest-rl-${randomBytes(3).toString('hex')}`;
    const subLine = `${user}:${400000 + Math.floor(Math.random() * 100) * 65536}:65536\n`;
    await execa('useradd', ['--create-home', '--shell', '/bin/sh', user]);
    const uid = Number((await execa('id', ['-u', user])).stdout);
    t.teardown(async () => {
      // Only processes of this throwaway user (ours), each by its id; then the user and its ids.
      const ps = await execa('ps', ['-u', String(uid), '-o', 'pid='], { reject: false });
      for (const pid of String(ps.stdout)
        .split('\n')
        .map((s) => Number(s.trim()))
        .filter((n) => n > 0)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      await execa('userdel', ['--remove', user], { reject: false });
      for (const file of ['/etc/subuid', '/etc/subgid']) {
        const text = await readFile(file, 'utf8');
        await writeFile(
          file,
          text
            .split('\n')
            .filter((l) => !l.startsWith(`${user}:`))
            .join('\n'),
        );
      }
      await execa('rm', ['-rf', `/tmp/podman-run-${uid}`, `/tmp/containers-user-${uid}`, `/run/user/${uid}`], { reject: false });
    });
    await appendFile('/etc/subuid', subLine);
    await appendFile('/etc/subgid', subLine);

    const env = { HOME: `/home/${user}`, PATH: process.env['PATH'] };
    const plan = JSON.stringify({ image: busybox, sessionId: `rl-${uid}`, limits, command: ['true'] });
    const out = await execa('runuser', ['-u', user, '--', process.execPath, `${repoRoot}/tools/sandbox-run/bin/sandbox-run`], {
      input: plan,
      reject: false,
      env,
      extendEnv: false,
    });
    t.equal(out.exitCode, 88, String(out.stderr));
    const doc = JSON.parse(String(out.stdout));
    t.equal(doc.error.code, 'rootless-cgroup-v1');
    t.match(doc.error.message, /ignored on cgroups V1 rootless systems/);
    t.notOk(existsSync(`/tmp/podman-run-${uid}`), 'podman never ran as that user (no rootless runtime dir was made)');
    const procs = await execa('ps', ['-u', String(uid), '-o', 'comm='], { reject: false });
    t.equal(String(procs.stdout).trim(), '', 'no process of that user is left (no pause process)');
    // The user can run podman at all, so the refusal is ours and not a broken setup.
    const version = await execa('runuser', ['-u', user, '--', 'podman', '--version'], { reject: false, env, extendEnv: false });
    t.equal(version.exitCode, 0, 'the throwaway user can execute podman');
  },
);

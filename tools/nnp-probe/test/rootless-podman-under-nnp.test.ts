// The failure this tool exists for, reproduced on this machine: rootless podman
// (a throwaway user with subuid/subgid ranges) fails under NoNewPrivs because the
// setuid newuidmap cannot elevate, and works without NoNewPrivs.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { podmanGlobalArgs } from '@agent-sandbox/shared';

const user = `astnnp-${randomBytes(3).toString('hex')}`;

/** Processes owned by uid (by pid, from /proc), so teardown ends only what this user ran. */
async function pidsOf(uid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    if (real !== undefined && Number(real) === uid) pids.push(Number(entry));
  }
  return pids;
}

/** podman as `user`, with this host's global args (runc on cgroup v1), optionally under NoNewPrivs. */
function podmanAs(nnp: boolean, args: string[]) {
  const podman = ['podman', ...podmanGlobalArgs(), ...args];
  const argv = ['-u', user, '--', ...(nnp ? ['setpriv', '--no-new-privs'] : []), ...podman];
  return execa('runuser', argv, { reject: false, timeout: 60_000, stdin: 'ignore', cwd: '/' });
}

t.test('rootless podman images fails under no-new-privs with the newuidmap error and works without it', async (t) => {
  const add = await execa('useradd', ['--create-home', '--shell', '/bin/sh', user], { reject: false });
  t.equal(add.exitCode, 0, add.stderr);
  const uid = Number((await execa('id', ['-u', user])).stdout);
  t.teardown(async () => {
    for (const pid of await pidsOf(uid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // Wait for the killed processes to be gone (userdel refuses a user that still runs
    // something), and retry while another engineer's useradd holds the passwd lock.
    for (let i = 0; i < 50 && (await pidsOf(uid)).length > 0; i += 1) await sleep(100);
    let del = await execa('userdel', ['--remove', user], { reject: false });
    for (let i = 0; i < 20 && del.exitCode !== 0 && del.exitCode !== 6; i += 1) {
      await sleep(250);
      del = await execa('userdel', ['--remove', '--force', user], { reject: false });
    }
    if (del.exitCode !== 0 && del.exitCode !== 6) throw new Error(`userdel ${user} failed (${del.exitCode}): ${del.stderr}`);
    for (const dir of [`/tmp/podman-run-${uid}`, `/tmp/containers-user-${uid}`, `/tmp/run-${uid}`]) {
      await rm(dir, { recursive: true, force: true });
    }
    const left = (await readFile('/etc/subuid', 'utf8')) + (await readFile('/etc/subgid', 'utf8'));
    if (left.split('\n').some((l) => l.startsWith(`${user}:`))) {
      await execa('sed', ['-i', `/^${user}:/d`, '/etc/subuid', '/etc/subgid']);
    }
  });
  for (const file of ['/etc/subuid', '/etc/subgid']) {
    t.match(await readFile(file, 'utf8'), new RegExp(`^${user}:\\d+:65536$`, 'm'), `${file} has a range for ${user}`);
  }

  // First under NoNewPrivs: no pause process exists yet, so podman must run newuidmap.
  const denied = await podmanAs(true, ['images']);
  t.not(denied.exitCode, 0, 'podman images fails under NoNewPrivs');
  t.match(denied.stderr, /newuidmap: write to uid_map failed: Operation not permitted/);

  const allowed = await podmanAs(false, ['images']);
  t.equal(allowed.exitCode, 0, allowed.stderr);
  t.match(allowed.stdout, /^REPOSITORY\s+TAG/m);
});

t.test('the throwaway user and its subordinate ranges are gone after teardown', async (t) => {
  // Runs after the test above (tap runs subtests in order); checks what that teardown did.
  const id = await execa('id', [user], { reject: false });
  t.not(id.exitCode, 0, `${user} no longer exists`);
  for (const file of ['/etc/subuid', '/etc/subgid']) {
    t.notMatch(await readFile(file, 'utf8'), new RegExp(`^${user}:`, 'm'), `${file} has no range for ${user}`);
  }
});

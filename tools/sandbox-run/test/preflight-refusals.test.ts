// The preflight fails closed before anything starts: image absent 82, no runtime 83,
// a missing mount source 86, limits this host cannot enforce 88 (for real: a throwaway
// rootless user on this cgroup v1 host).
import t from 'tap';
import { needs } from '@agent-sandbox/testkit';
import { execa } from 'execa';
import { appendFile, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { runBin, tempDir, repoRoot, binPath } from '@agent-sandbox/testkit';
import { cgroupManager, cgroupMode } from '@agent-sandbox/shared';
import { preflight, realHostProbe, seccompProfilePath, type HostProbe } from '../dist/index.js';

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
    input: { image: busybox, sessionId: 'nosrc', limits, mounts: [{ source: `${dir}/missing`, destination: '/w', readOnly: false }], command: ['true'] },
  });
  t.equal(out.exitCode, 86, out.stderr);
  t.equal(out.json.error.code, 'mount-source-missing');
  t.match(out.json.error.message, /^input\.mounts\[0\]\.source/);
  t.notOk(existsSync(`${dir}/missing`), 'the source was not created');
});

t.test('no podman in the system directories exits 83 naming podman', needs({ root: true }), async (t) => {
  // Hide the real podman in a private mount namespace: /dev/null bound over it is not executable.
  const out = await execa('unshare', ['--mount', '--propagation', 'private', 'sh', '-c',
    'mount --bind /dev/null "$(command -v podman)" && exec "$@"', 'sh', binPath('sandbox-run')], {
    input: JSON.stringify({ image: busybox, sessionId: 'nopodman', limits, command: ['true'] }),
    reject: false,
  });
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
t.test('rootless podman on this cgroup v1 host is refused with 88 before podman runs (a real user)', needs({ root: true, cgroup: 'v1' }), async (t) => {
  const user = `astest-rl-${randomBytes(3).toString('hex')}`;
  const subLine = `${user}:${400000 + Math.floor(Math.random() * 100) * 65536}:65536\n`;
  await execa('useradd', ['--create-home', '--shell', '/bin/sh', user]);
  const uid = Number((await execa('id', ['-u', user])).stdout);
  t.teardown(async () => {
    // Only processes of this throwaway user (ours), each by its id; then the user and its ids.
    const ps = await execa('ps', ['-u', String(uid), '-o', 'pid='], { reject: false });
    for (const pid of String(ps.stdout).split('\n').map((s) => Number(s.trim())).filter((n) => n > 0)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    await execa('userdel', ['--remove', user], { reject: false });
    for (const file of ['/etc/subuid', '/etc/subgid']) {
      const text = await readFile(file, 'utf8');
      await writeFile(file, text.split('\n').filter((l) => !l.startsWith(`${user}:`)).join('\n'));
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
});

// ---- other hosts, described through the probe (stand-ins: this host is cgroup v1 with runc) ----
// The committed seccomp profile is read for real, unless the row says this user cannot read it.
function describedHost(files: Record<string, string>, opts: { uid?: number; executables?: string[]; profileReadable?: boolean } = {}): HostProbe {
  const real = realHostProbe();
  const passThrough = ['/proc/self/limits', ...(opts.profileReadable === false ? [] : [seccompProfilePath()])];
  return {
    uid: opts.uid ?? 0,
    env: { PATH: '/usr/bin:/bin', HOME: '/root' },
    readFile: (f) => files[f] ?? (passThrough.includes(f) ? real.readFile(f) : undefined),
    exists: (f) => f in files,
    isExecutable: (f) => (opts.executables ?? ['/usr/bin/podman', '/usr/sbin/runc', '/usr/bin/crun']).includes(f),
  };
}
const v2 = (controllers: string, uid = 0) =>
  uid === 0
    ? { '/sys/fs/cgroup/cgroup.controllers': controllers }
    : { '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids', [`/sys/fs/cgroup/user.slice/user-${uid}.slice/user@${uid}.service/cgroup.controllers`]: controllers };
const plan = { image: busybox, sessionId: 'desc', limits };
const noImageCheck = { checkImage: false };

interface HostRow {
  claim: string;
  probe: HostProbe;
  exitCode: number;
  code?: string;
}
const v1Cgroups = '#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t6\t1\nmemory\t4\t9\t1\npids\t8\t6\t1\n';
const hostRows: HostRow[] = [
  { claim: 'stand-in: rootless on cgroup v2 without a delegated pids controller is refused (88)', probe: describedHost(v2('cpu memory', 1500), { uid: 1500 }), exitCode: 88, code: 'controllers-not-delegated' },
  { claim: 'stand-in: rootless on cgroup v2 without a user session cgroup is refused (88)', probe: describedHost({ '/sys/fs/cgroup/cgroup.controllers': 'cpu memory pids' }, { uid: 1500 }), exitCode: 88, code: 'controllers-not-delegated' },
  { claim: 'stand-in: rootful cgroup v2 without the memory controller is refused (88)', probe: describedHost(v2('cpu io pids')), exitCode: 88, code: 'controllers-not-delegated' },
  { claim: 'stand-in: rootful cgroup v1 without swap accounting is refused (88)', probe: describedHost({ '/proc/cgroups': v1Cgroups }), exitCode: 88, code: 'swap-limit-unsupported' },
  { claim: 'stand-in: rootful cgroup v1 without the pids hierarchy is refused (88)', probe: describedHost({ '/proc/cgroups': v1Cgroups.replace('pids\t8', 'pids\t0'), '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': '' }), exitCode: 88, code: 'controller-missing' },
  { claim: 'stand-in: cgroup v1 without runc is refused (83: crun cannot start containers there)', probe: describedHost({ '/proc/cgroups': v1Cgroups, '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': '' }, { executables: ['/usr/bin/podman', '/usr/bin/crun'] }), exitCode: 83, code: 'runtime-missing' },
  { claim: 'stand-in: rootless cgroup v2 under NoNewPrivs is refused (83: newuidmap cannot run)', probe: describedHost({ ...v2('cpu memory pids', 1500), '/proc/self/status': 'Name:\tnode\nNoNewPrivs:\t1\n' }, { uid: 1500 }), exitCode: 83, code: 'no-new-privs-rootless' },
  { claim: 'stand-in: a rootless caller that cannot read the seccomp profile is refused (83), never run without it', probe: describedHost(v2('cpu memory pids', 1500), { uid: 1500, profileReadable: false }), exitCode: 83, code: 'seccomp-profile-missing' },
  { claim: 'stand-in: rootless cgroup v2 with memory, pids and cpu delegated is accepted', probe: describedHost(v2('cpu memory pids', 1500), { uid: 1500 }), exitCode: 0 },
  { claim: 'stand-in: rootful cgroup v1 with the controllers and swap accounting is accepted', probe: describedHost({ '/proc/cgroups': v1Cgroups, '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': '' }), exitCode: 0 },
];
let hostRan = 0;
for (const row of hostRows) {
  t.test(row.claim, async (t) => {
    if (row.exitCode === 0) {
      const facts = await preflight(plan, { ...noImageCheck, probe: row.probe });
      t.equal(facts.rootless, row.probe.uid !== 0);
    } else {
      await t.rejects(preflight(plan, { ...noImageCheck, probe: row.probe }), { exitCode: row.exitCode, code: row.code });
    }
    hostRan += 1;
  });
}
t.test('every described host ran', async (t) => t.equal(hostRan, hostRows.length));

t.test('this host passes the preflight with the real probe, naming the runtime it supports (runc on v1, crun on v2)', async (t) => {
  const facts = await preflight({ image: busybox, sessionId: 'real', limits });
  t.equal(facts.runtime, cgroupMode() === 'v2' ? 'crun' : 'runc');
  t.equal(facts.cgroupManager, cgroupManager());
  t.equal(facts.rootless, process.getuid?.() !== 0);
  t.ok(facts.ulimits.nofile <= 4096 && facts.ulimits.nproc <= 4096);
});


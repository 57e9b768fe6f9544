// Denial proofs, checked from inside real containers started by bin/sandbox-run: no
// capabilities, NoNewPrivs, a mount table that is exactly an allowlist with each mount's
// ro/rw flag, read-only secrets, no other session, no host root/home/podman socket, and
// writes only where the session may write. (Replaces the original spec's denial-proof script, which counted mounts.)
import t from 'tap';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { agentUid, busybox, debian, ensureImage, makeSession, parseMountinfo, runScript, runtimeMounts, sessionMounts } from './session.js';

await ensureImage(busybox);
await ensureImage(debian);
const s = await makeSession(t);

// ---- host canaries: a file in the host's root directory (a user's: in the host's /tmp, which
// it can write) and in the host user's home, and a host process ----
// A run killed before its teardown may have left its canaries; they are this suite's own names.
const rootDir = process.geteuid?.() === 0 ? '/' : tmpdir();
for (const [dir, prefix] of [
  [rootDir, 'astest-hostroot-'],
  [homedir(), '.astest-hosthome-'],
] as const) {
  for (const f of readdirSync(dir).filter((n) => n.startsWith(prefix))) rmSync(`${dir === '/' ? '' : dir}/${f}`, { force: true });
}
const hex = randomBytes(6).toString('hex');
const hostRootCanary = `${rootDir === '/' ? '' : rootDir}/astest-hostroot-${hex}`;
const hostHomeCanary = `${homedir()}/.astest-hosthome-${hex}`;
await writeFile(hostRootCanary, `${hostRootCanary}\n`);
await writeFile(hostHomeCanary, `${hostHomeCanary}\n`);
// One process, no shell between and no pipes: SIGKILL at teardown ends it and nothing waits for it.
const hostProcess = execa('perl', ['-e', 'sleep 300', `astest-hostproc-${hex}`], { reject: false, stdio: 'ignore' });
t.teardown(async () => {
  hostProcess.kill('SIGKILL');
  await rm(hostRootCanary, { force: true });
  await rm(hostHomeCanary, { force: true });
});

const capsScript = "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/1/status /proc/self/status; echo uid=$(id -u) gid=$(id -g)";
const images = [
  { image: busybox, label: 'busybox', secret: true },
  { image: debian, label: 'debian', secret: false }, // its entrypoint would run cred-stage install on a staged secret
];
let imagesRan = 0;
for (const { image, label, secret } of images) {
  t.test(`${label}: every capability set is empty and NoNewPrivs is 1, for PID 1 and the command, as uid 1000`, async (t) => {
    const out = await runScript(t, `caps-${label}`, capsScript, { image, mounts: sessionMounts(s, secret) });
    t.equal(out.exitCode, 0, out.stderr);
    for (const who of ['/proc/1/status', '/proc/self/status']) {
      for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
        t.match(out.stdout, new RegExp(`^${who}:${set}:\\s+0000000000000000$`, 'm'), `${who} ${set} is 0`);
      }
      t.match(out.stdout, new RegExp(`^${who}:NoNewPrivs:\\s+1$`, 'm'), `${who} NoNewPrivs is 1`);
    }
    t.match(out.stdout, /^uid=1000 gid=1000$/m);
  });

  t.test(`${label}: the mount table's destinations are exactly the allowlist, each with its ro/rw flag`, async (t) => {
    const out = await runScript(t, `mounts-${label}`, 'cat /proc/self/mountinfo', { image, mounts: sessionMounts(s, secret) });
    t.equal(out.exitCode, 0, out.stderr);
    const table = parseMountinfo(out.stdout);
    const expected: Record<string, 'ro' | 'rw'> = {
      ...runtimeMounts(),
      '/sandbox/workspaces/s1': 'rw',
      '/sandbox/home': 'rw',
      ...(secret ? { '/sandbox-secrets/codex/auth.json': 'ro' as const } : {}),
    };
    const actual = Object.fromEntries([...table].map(([point, m]) => [point, m.flag]));
    t.same(Object.keys(actual).sort(), Object.keys(expected).sort(), 'the destinations are exactly the allowlist');
    t.same(actual, expected, 'each destination has its expected flag');
    // Each session mount shows the host directory it came from: that session's, never the root.
    t.equal(table.get('/sandbox/workspaces/s1')?.root, s.workspace);
    t.equal(table.get('/sandbox/home')?.root, s.home);
    if (secret) t.equal(table.get('/sandbox-secrets/codex/auth.json')?.root, s.secret);
    // Every mount from the host's own filesystems is one of ours or podman's per-container files.
    const hostDevs = new Set(
      ['/', '/tmp', '/run', '/var/lib/containers'].map((p) => {
        try {
          const st = statSync(p);
          return `${Math.floor(st.dev / 256)}:${st.dev % 256}`;
        } catch {
          return '';
        }
      }),
    );
    const allowedRoots = [s.workspace, s.home, s.secret];
    for (const [point, m] of table) {
      if (!hostDevs.has(m.devno) || ['overlay', 'tmpfs', 'proc', 'sysfs', 'cgroup', 'cgroup2', 'devpts', 'mqueue'].includes(m.fstype))
        continue;
      const podmanFile =
        /^\/(var\/)?run\/containers\/storage\/overlay-containers\/[0-9a-f]{64}\/userdata\/(hosts|hostname|resolv\.conf)$/.test(m.root);
      t.ok(allowedRoots.includes(m.root) || podmanFile, `${point} comes from ${m.root}, an allowed host path`);
    }
    imagesRan += 1;
  });
}
t.test('both images ran the mount allowlist', async (t) => t.equal(imagesRan, images.length));

t.test('/sandbox-secrets/* is read-only even to its owner; the host copy is byte-identical', async (t) => {
  const before = await readFile(s.secret);
  const script = [
    'ls -ln /sandbox-secrets/codex/auth.json',
    'cat /sandbox-secrets/codex/auth.json',
    '(echo refreshed >> /sandbox-secrets/codex/auth.json) 2>&1; echo "append=$?"',
    '(echo refreshed > /sandbox-secrets/codex/auth.json) 2>&1; echo "truncate=$?"',
    '(touch /sandbox-secrets/codex/new) 2>&1; echo "create=$?"',
    '(rm -f /sandbox-secrets/codex/auth.json) 2>&1; echo "remove=$?"',
    '(chmod 666 /sandbox-secrets/codex/auth.json) 2>&1; echo "chmod=$?"',
  ].join('; ');
  const out = await runScript(t, 'secrets', script, { mounts: sessionMounts(s) });
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stdout, /^-rw------- +1 1000 +1000 /m, 'the staged file belongs to uid 1000 with mode 600 (so only the mount stops writes)');
  t.match(out.stdout, s.canary.secret, 'the agent can read it');
  for (const op of ['append', 'truncate', 'create', 'remove', 'chmod']) t.match(out.stdout, new RegExp(`^${op}=[1-9]`, 'm'), `${op} fails`);
  t.match(out.stdout, /Read-only file system/, 'the refusal is the read-only mount');
  t.same(await readFile(s.secret), before, 'the host file is byte-identical');
});

t.test("no other session's workspace or home is visible", async (t) => {
  const script = [
    'echo "workspaces=$(ls -A /sandbox/workspaces | tr "\\n" " ")"',
    'echo "homes=$(ls -A /sandbox/home | tr "\\n" " ")"',
    `find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f -exec grep -l "${s.canary.other}" {} + 2>/dev/null; echo "grep-done"`,
    `grep -c "${s.otherWorkspace}\\|${s.otherHome}\\| ${s.root} " /proc/self/mountinfo; true`,
  ].join('; ');
  const out = await runScript(t, 'others', script, { mounts: sessionMounts(s) });
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stdout, /^workspaces=s1 $/m, "only this session's workspace is under /sandbox/workspaces");
  t.match(out.stdout, /^homes=$/m, "the home is this session's own (empty) home");
  t.match(out.stdout, /^grep-done$/m);
  t.notMatch(out.stdout.split('grep-done')[0] ?? '', /\//, "no file inside holds the other session's canary");
  t.match(out.stdout, /^0$/m, "neither the other session's directories nor the whole root are mounted");
});

t.test("the host's root, its home and podman's socket are not reachable", async (t) => {
  const script = [
    `for p in ${hostRootCanary} ${hostHomeCanary} /run/podman/podman.sock /var/run/docker.sock /run/user /var/lib/containers /run/containers; do if [ -e "$p" ]; then echo "present $p"; else echo "absent $p"; fi; done`,
    `find / \\( -path /proc -o -path /sys \\) -prune -o -type s -print 2>/dev/null | sed 's/^/socket /'`,
    `find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f -exec grep -l "astest-host[a-z]*-${hex}" {} + 2>/dev/null | sed 's/^/canary-in /'`,
    // control: a process started inside with a marker in its argv IS found the same way
    `sh -c 'sleep 30' astest-inproc-${hex} & sleep 0.2; echo "inside=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c "astest-inpro[c]-${hex}")"; kill $!`,
    `cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c "astest-hostpro[c]-${hex}"; true`, // [c]: the script's own cmdline must not match
    'echo done',
  ].join('; ');
  const out = await runScript(t, 'host', script, { mounts: sessionMounts(s) });
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stdout, /^done$/m);
  for (const p of [
    hostRootCanary,
    hostHomeCanary,
    '/run/podman/podman.sock',
    '/var/run/docker.sock',
    '/run/user',
    '/var/lib/containers',
    '/run/containers',
  ]) {
    t.match(out.stdout, new RegExp(`^absent ${p}$`, 'm'), `${p} is not there`);
  }
  t.notMatch(out.stdout, /^socket /m, "no unix socket exists anywhere in the container's filesystem");
  t.notMatch(out.stdout, /^canary-in /m, 'no file inside holds a host canary');
  t.match(out.stdout, /^inside=1$/m, 'control: a marked process inside the container is found by the same search');
  t.match(out.stdout, /^0$/m, 'the marked host process is not visible');
  // The canaries do exist on the host, so their absence inside means something.
  t.ok((await stat(hostRootCanary)).isFile() && (await stat(hostHomeCanary)).isFile());
});

t.test('writes outside the workspace and home fail; inside they succeed and reach the host as uid 1000', async (t) => {
  const denied = [
    '/astest-w',
    '/etc/astest-w',
    '/usr/astest-w',
    '/bin/astest-w',
    '/sandbox/astest-w',
    '/sandbox/workspaces/astest-w',
    '/sandbox/workspaces/s2',
    '/sandbox-secrets/astest-w',
    '/sandbox-secrets/codex/astest-w',
    '/sys/fs/cgroup/astest-w',
    '/proc/sys/kernel/hostname',
    '/proc/sysrq-trigger',
    '/dev/astest-w',
  ];
  const allowed = ['/sandbox/workspaces/s1/astest-w', '/sandbox/home/astest-w'];
  const tryWrite = (p: string) => `if (echo written-${hex} > ${p}) 2>/dev/null; then echo "ok ${p}"; else echo "denied ${p}"; fi`;
  const out = await runScript(t, 'writes', [...denied, ...allowed].map(tryWrite).join('; '), { mounts: sessionMounts(s) });
  t.equal(out.exitCode, 0, out.stderr);
  let checked = 0;
  for (const p of denied) {
    t.match(out.stdout, new RegExp(`^denied ${p}$`, 'm'), `writing ${p} fails`);
    checked += 1;
  }
  for (const p of allowed) {
    t.match(out.stdout, new RegExp(`^ok ${p}$`, 'm'), `writing ${p} succeeds`);
    checked += 1;
  }
  t.equal(checked, denied.length + allowed.length);
  for (const host of [`${s.workspace}/astest-w`, `${s.home}/astest-w`]) {
    t.equal(await readFile(host, 'utf8'), `written-${hex}\n`, `${host} holds the write`);
    t.equal((await stat(host)).uid, agentUid, `${host} belongs to uid ${agentUid} on the host`);
  }
});

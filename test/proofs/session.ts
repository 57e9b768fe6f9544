// What both proof suites share: a real session layout on the host (two sessions' workspaces
// and homes, a staged secret), a plan in sandbox-run's contract, and a way to run a script
// in a real container through the real sandbox-run executable.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chown, chmod, mkdir, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { cgroupMode, ociRuntime } from '@agent-sandbox/shared';
import {
  agentUid,
  containerName,
  runBin,
  imageExists,
  repoRoot,
  sessionRoot,
  sessionWorkspace,
  type BinRun,
  type Teardown,
} from '@agent-sandbox/testkit';
import { attributeEnd, prepareAttribution } from '@agent-sandbox/podman-attrib';

export const busybox = 'localhost/agent-sandbox-busybox:latest';
export const debian = 'localhost/agent-sandbox:latest';
export { agentUid };

export interface Session {
  base: string;
  root: string;
  id: string;
  workspace: string;
  home: string;
  secret: string;
  otherWorkspace: string;
  otherHome: string;
  canary: { secret: string; other: string };
}

/** <base>/root/{workspaces,homes}/{s1,s2} and <base>/secrets/codex/auth.json, removed at teardown (testkit's one layout). */
export async function makeSession(t: Teardown): Promise<Session> {
  const hex = randomBytes(6).toString('hex');
  const root = await sessionRoot(t, 'proof', { credential: false, canary: `astest-secret-${hex}` });
  // Rootful podman, no user namespace: the container's uid 1000 is the host's uid 1000, so the
  // session's own directories belong to it (what the launcher does when it runs as root).
  const s1 = await sessionWorkspace(t, root, 'proof', { id: 's1', home: true, launcherContainer: false });
  const other = { workspace: `${root.root}/workspaces/s2`, home: `${root.root}/homes/s2` };
  const s: Session = {
    base: root.base,
    root: root.root,
    id: s1.id,
    workspace: s1.path,
    home: s1.home,
    secret: `${root.base}/secrets/codex/auth.json`,
    otherWorkspace: other.workspace,
    otherHome: other.home,
    canary: { secret: root.canary, other: `astest-other-session-${hex}` },
  };
  for (const dir of [s.otherWorkspace, s.otherHome, `${s.base}/secrets/codex`]) await mkdir(dir, { recursive: true });
  await writeFile(`${s.otherWorkspace}/notes.txt`, `${s.canary.other}\n`);
  await writeFile(`${s.otherHome}/.history`, `${s.canary.other}\n`);
  // The secret belongs to the agent uid and is mode 600: only the mount can make it read-only.
  await writeFile(s.secret, `{"token":"${s.canary.secret}"}\n`);
  await chown(s.secret, agentUid, agentUid);
  await chmod(s.secret, 0o600);
  return s;
}

export function sessionMounts(s: Session, withSecret = true) {
  return [
    { source: s.workspace, destination: `/sandbox/workspaces/${s.id}`, readOnly: false },
    { source: s.home, destination: '/sandbox/home', readOnly: false },
    ...(withSecret ? [{ source: s.secret, destination: '/sandbox-secrets/codex/auth.json', readOnly: true }] : []),
  ];
}

export const smallLimits = { memory: '256m', memorySwap: '256m', pids: 128, cpus: 1, cpuShares: 256 };

/**
 * Runs `sh -c script` in a container through bin/sandbox-run; the container is force-removed at
 * teardown. The timeout allows for the VM tier's CPU emulation (a rootless start there can take
 * a minute); here a container runs in about a second.
 */
export async function runScript(
  t: Teardown,
  label: string,
  script: string,
  plan: Record<string, unknown> = {},
  timeoutMs = 600_000,
): Promise<BinRun & { name: string }> {
  const name = containerName(t, label);
  const out = await runBin('sandbox-run', [], {
    input: { image: busybox, sessionId: label, name, limits: smallLimits, command: ['sh', '-c', script], ...plan },
    timeoutMs,
  });
  return { ...out, name };
}

/** Builds an image with image/ scripts when it is missing (fresh machine); the busybox one takes a second. */
export async function ensureImage(image: string): Promise<void> {
  if (await imageExists(image)) return;
  const script = image === busybox ? 'image/build-busybox.sh' : 'image/build-all.sh';
  await execa('bash', [script], { cwd: repoRoot, stdio: 'inherit', timeout: 1_800_000 });
}

/** mountinfo -> {mountPoint: {flag: 'ro'|'rw', root, source}} (octal escapes decoded). */
export function parseMountinfo(text: string): Map<string, { flag: 'ro' | 'rw'; root: string; devno: string; fstype: string }> {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  const out = new Map<string, { flag: 'ro' | 'rw'; root: string; devno: string; fstype: string }>();
  for (const line of text.split('\n').filter(Boolean)) {
    const [pre, post] = line.split(' - ');
    const f = (pre ?? '').split(' ');
    const flag = (f[5] ?? '').split(',')[0] === 'ro' ? 'ro' : 'rw';
    out.set(unescape(f[4] ?? ''), { flag, root: unescape(f[3] ?? ''), devno: f[2] ?? '', fstype: (post ?? '').split(' ')[0] ?? '' });
  }
  return out;
}

/**
 * Runs `sh -c script` through bin/sandbox-run the way the launcher runs a session: under the
 * parent cgroup podman-attrib prepares for it (a path with cgroupfs, a slice with systemd; the
 * session id has dashes, which a slice name must escape), then attributed from what outlives
 * the container. `prepared` resolves at once (for watching the cgroup meanwhile).
 */
export function runAttributed(t: Teardown, label: string, script: string, plan: Record<string, unknown> = {}, timeoutMs = 600_000) {
  const sessionId = `astest-${label}-${randomBytes(4).toString('hex')}`;
  const attribution = prepareAttribution({ sessionId });
  t.teardown(() => {
    attribution.cleanup();
  });
  const done = (async () => {
    const startedAt = new Date().toISOString();
    const out = await runScript(t, label, script, { sessionId, cgroupParent: attribution.cgroupParent, ...plan }, timeoutMs);
    const result = attributeEnd({
      sessionId,
      containerName: out.name,
      exitCode: out.exitCode,
      startedAt,
      endedAt: new Date().toISOString(),
      prepared: attribution,
    });
    return { out, attribution: result };
  })();
  return { prepared: Promise.resolve(attribution), done };
}

/**
 * podman's default masked and read-only paths (containers/common 0.50): the runtime mounts each
 * one only where it exists, which depends on the kernel (the container's is the host's).
 */
const maskedPaths = [
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/fs/selinux',
  '/sys/dev/block',
];
const readonlyPaths = ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** What the runtime mounts over a masked or read-only path that exists here, with its flag. */
function maskMounts(): Record<string, 'ro' | 'rw'> {
  const out: Record<string, 'ro' | 'rw'> = {};
  // A masked directory gets a read-only tmpfs, a masked file /dev/null bound over it: read-write
  // by runc, read-only by crun (measured in the VM tier's guest); either way it reads empty.
  const maskedFile = ociRuntime() === 'crun' ? 'ro' : 'rw';
  for (const p of maskedPaths) {
    try {
      out[p] = statSync(p).isDirectory() ? 'ro' : maskedFile;
    } catch {
      // not on this kernel: nothing is mounted there
    }
  }
  for (const p of readonlyPaths) if (existsSync(p)) out[p] = 'ro';
  return out;
}

/**
 * The runtime's own mounts on this host (podman 4.3, runc or crun, --read-only), each with its
 * flag: every session's mount table is these plus the ones the session plan names.
 */
export function runtimeMounts(): Record<string, 'ro' | 'rw'> {
  const fixed: Record<string, 'ro' | 'rw'> = {
    '/': 'ro', // --read-only: the image root
    '/dev': 'rw',
    '/dev/pts': 'rw',
    '/dev/mqueue': 'rw',
    '/dev/shm': 'rw',
    '/proc': 'rw',
    '/sys': 'ro',
    '/run': 'rw', // tmpfs (--read-only-tmpfs), counted against the container's memory
    '/tmp': 'rw', // tmpfs
    '/var/tmp': 'rw', // tmpfs
    '/etc/hosts': 'ro',
    '/etc/hostname': 'ro',
    ...maskMounts(),
    // Rootless podman cannot mknod: it binds the host's own device nodes (measured in the guest).
    ...(process.geteuid?.() === 0
      ? {}
      : Object.fromEntries(
          ['/dev/null', '/dev/zero', '/dev/full', '/dev/tty', '/dev/random', '/dev/urandom'].map((d) => [d, 'rw' as const]),
        )),
  };
  if (cgroupMode() === 'v2') return { ...fixed, '/sys/fs/cgroup': 'ro' };
  // cgroup v1: a tmpfs with one read-only mount per v1 hierarchy the host has mounted.
  const hierarchies = parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'));
  const v1: Record<string, 'ro'> = {};
  for (const [point, m] of hierarchies) {
    if (m.fstype === 'cgroup' && point.startsWith('/sys/fs/cgroup/')) v1[point] = 'ro';
  }
  return { ...fixed, '/sys/fs/cgroup': 'rw', ...v1 };
}

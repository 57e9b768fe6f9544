// Attempts on the network and the mount table, from inside a probe session (namespaces:
// attempts-namespaces.ts).
import net from 'node:net';
import { v2 } from '../cgroup-view.js';
import { parseMountinfo } from '../session.js';
import { scOnHost } from './host-controls.js';
import { rootful } from './session-kit.js';
import type { ProbeCtx } from './probe-context.js';
import { errno, refused, type Asserts, type Attempt } from './probe-script.js';

const { EPERM, ENOSYS, EACCES } = errno;
/** A cgroup file system mounted inside: one v1 hierarchy, or the v2 one at /sys/fs/cgroup. */
const cgroupMount = v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/memory';

function lineValue(out: string, name: string): string | undefined {
  return new RegExp(`^${name}=(.*)$`, 'm').exec(out)?.[1];
}

function probeResults(t: Asserts, out: string, specs: string[], wanted: RegExp, why: string): void {
  for (const spec of specs) t.match(out, new RegExp(`^${spec.replace(/[[\]]/g, '\\$&')} ${wanted.source}$`, 'm'), `${spec}: ${why}`);
}

/** Control: the host really serves what the session must not reach. */
async function hostReaches(path: string | { port: number }): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = typeof path === 'string' ? net.connect(path) : net.connect({ host: '127.0.0.1', port: path.port });
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export const networkAttempts: Array<Attempt<ProbeCtx>> = [
  {
    key: 'net-interfaces',
    claim: 'only the loopback interface exists: no other link, no IPv4 route, IPv6 routes only on lo',
    script: () => String.raw`
echo "sysfs=$(ls /sys/class/net | tr '\n' ' ')"
echo "procnet=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
echo "v4routes=$(tail -n +2 /proc/net/route | wc -l)"
echo "v6devs=$(awk '{print $10}' /proc/net/ipv6_route | sort -u | tr '\n' ' ')"`,
    check: (t, out) => {
      t.equal(lineValue(out, 'sysfs'), 'lo ', '/sys/class/net holds lo only');
      t.equal(lineValue(out, 'procnet'), 'lo ', '/proc/net/dev counts lo only');
      t.equal(lineValue(out, 'v4routes'), '0', 'the IPv4 routing table is empty');
      t.equal(lineValue(out, 'v6devs'), 'lo ', 'every IPv6 route is on lo');
    },
  },
  {
    key: 'net-v4',
    claim: 'there is no IPv4 route out: TCP and UDP to public and documentation addresses fail with ENETUNREACH',
    peer: 'codex linux-sandbox sandbox_blocks_curl, sandbox_blocks_nc; sandbox-runtime "should block all HTTP requests when allowedDomains is empty"',
    script: () => 'node "$ASTEST/net-probe.js" tcp:203.0.113.1:80 tcp:1.1.1.1:443 tcp:8.8.8.8:53 udp:8.8.8.8:53 udp:198.51.100.7:123',
    check: (t, out) =>
      probeResults(
        t,
        out,
        ['tcp:203.0.113.1:80', 'tcp:1.1.1.1:443', 'tcp:8.8.8.8:53', 'udp:8.8.8.8:53', 'udp:198.51.100.7:123'],
        /ENETUNREACH/,
        'no route',
      ),
  },
  {
    key: 'net-v6',
    claim: 'there is no IPv6 route out: TCP and UDP to public and documentation addresses fail with ENETUNREACH',
    script: () => 'node "$ASTEST/net-probe.js" tcp:[2001:db8::1]:80 tcp:[2606:4700:4700::1111]:443 udp:[2001:4860:4860::8888]:53',
    check: (t, out) =>
      probeResults(
        t,
        out,
        ['tcp:[2001:db8::1]:80', 'tcp:[2606:4700:4700::1111]:443', 'udp:[2001:4860:4860::8888]:53'],
        /ENETUNREACH/,
        'no route',
      ),
  },
  {
    key: 'net-dns',
    claim: 'no name resolves: there is no resolv.conf, getent and getaddrinfo fail; only /etc/hosts answers',
    peer: 'codex linux-sandbox sandbox_blocks_getent; sandbox-runtime "should block DNS lookups when allowedDomains is empty"',
    script: () => String.raw`
if [ -e /etc/resolv.conf ]; then echo "resolv.conf present: $(cat /etc/resolv.conf | tr '\n' ' ')"; else echo "resolv.conf absent"; fi
getent ahosts example.com; echo "getent-example=$?"
getent hosts registry.npmjs.org; echo "getent-npm=$?"
echo "control=$(getent hosts localhost | head -n 1)"
node "$ASTEST/net-probe.js" dns:example.com dns:api.openai.com`,
    check: (t, out) => {
      t.match(out, /^resolv.conf absent$/m, 'no resolver is configured');
      t.match(out, /^getent-example=2$/m, 'getent ahosts example.com: not found (2)');
      t.match(out, /^getent-npm=2$/m, 'getent hosts registry.npmjs.org: not found (2)');
      t.match(out, /^control=(127\.0\.0\.1|::1)\s+localhost/m, 'control: /etc/hosts still answers for localhost');
      probeResults(t, out, ['dns:example.com', 'dns:api.openai.com'], /(EAI_AGAIN|ENOTFOUND)/, 'getaddrinfo fails');
    },
  },
  {
    key: 'net-raw',
    claim:
      "raw sockets are refused with EPERM, which only CAP_NET_RAW decides: ICMP over raw IPv4 and IPv6 (what ping uses without a ping socket) and packet sockets (on the host the same calls succeed as root and fail with the capability dropped); ICMP datagram sockets are refused as ping_group_range, read inside, excludes the session's gid",
    peer: 'codex linux-sandbox sandbox_blocks_ping',
    script: () =>
      [
        'sc raw4 41 i:2 i:3 i:1; sc raw6 41 i:10 i:3 i:58; sc packet 41 i:17 i:3 i:0x0300; sc packet-dgram 41 i:17 i:2 i:0x0300',
        'echo "ping_group_range=$(cat /proc/sys/net/ipv4/ping_group_range | tr -s "\t " " ") gid=$(id -g)"',
        'sc ping4 41 i:2 i:2 i:1; sc ping6 41 i:10 i:2 i:58',
      ].join('\n'),
    check: async (t, out) => {
      refused(t, out, ['raw4', 'raw6', 'packet', 'packet-dgram'], [EPERM], 'needs CAP_NET_RAW');
      const root = rootful ? 'root' : "root of the user's own user namespace";
      t.match(
        await scOnHost(['raw4', '41', 'i:2', 'i:3', 'i:1']),
        /^raw4 ok=\d+$/,
        `control: on the host, ${root} with CAP_NET_RAW opens the same raw ICMP socket`,
      );
      t.equal(
        await scOnHost(['raw4', '41', 'i:2', 'i:3', 'i:1'], 'net_raw'),
        `raw4 errno=${EPERM}`,
        `control: and ${root} without CAP_NET_RAW is refused with EPERM: the capability decides`,
      );
      const range = /^ping_group_range=(\d+) (\d+) gid=(\d+)$/m.exec(out);
      t.ok(range, `the session's ping_group_range and gid were read: ${range?.[0]}`);
      const [lo, hi, gid] = (range ?? []).slice(1).map(Number) as [number, number, number];
      t.ok(gid < lo || gid > hi, `gid ${gid} is outside the session's ping_group_range ${lo} ${hi} (podman's default)`);
      refused(t, out, ['ping4', 'ping6'], [EACCES], 'a gid outside ping_group_range gets EACCES');
    },
  },
  {
    key: 'net-host-sockets',
    claim: "the host's loopback services and its abstract unix sockets are unreachable (the session has its own network namespace)",
    peer: 'sandbox-runtime "should block Unix socket connections with seccomp"',
    script: (c) =>
      `node "$ASTEST/net-probe.js" tcp:127.0.0.1:${c.hostLoopbackPort} tcp:[::1]:${c.hostLoopbackPort} unix:@${c.abstractName}`,
    check: async (t, out, c) => {
      probeResults(
        t,
        out,
        [`tcp:127.0.0.1:${c.hostLoopbackPort}`, `tcp:[::1]:${c.hostLoopbackPort}`, `unix:@${c.abstractName}`],
        /ECONNREFUSED/,
        'nothing listens there inside',
      );
      t.ok(await hostReaches({ port: c.hostLoopbackPort }), 'control: the host reaches its own loopback server');
      t.ok(await hostReaches(`\0${c.abstractName}`), 'control: the host reaches its own abstract socket');
    },
  },
];

export const mountAttempts: Array<Attempt<ProbeCtx>> = [
  {
    key: 'mount-new',
    claim: 'mount(2) of a tmpfs, a proc and a cgroup v1 hierarchy fails with EPERM, and so does mount(8)',
    script: () => String.raw`d=$(mktemp -d)
sc tmpfs 165 s:none s:$d s:tmpfs i:0 i:0
sc proc 165 s:proc s:$d s:proc i:0 i:0
sc cgroup 165 s:cgroup s:$d s:cgroup i:0 s:memory
sc cgroup2 165 s:cgroup2 s:$d s:cgroup2 i:0 i:0
mount -t tmpfs none "$d"; echo "mount8=$?"
if mountpoint -q "$d"; then echo "mounted"; else echo "not-mounted"; fi`,
    check: (t, out) => {
      refused(t, out, ['tmpfs', 'proc', 'cgroup', 'cgroup2'], [EPERM], 'needs CAP_SYS_ADMIN');
      t.match(out, /^mount8=32$/m, 'mount(8) fails (32)');
      t.match(out, /^not-mounted$/m, 'the directory is not a mount point');
    },
  },
  {
    key: 'mount-bind',
    claim: 'bind mounts (of the home, of / recursively) and moving a mount fail with EPERM',
    script: () => String.raw`d=$(mktemp -d)
sc bind 165 s:/sandbox/home s:$d i:0 i:4096 i:0
sc rbind-root 165 s:/ s:$d i:0 i:0x5000 i:0
sc move-home 165 s:/sandbox/home s:$d i:0 i:8192 i:0
mount --bind /sandbox/home "$d"; echo "mount8=$?"`,
    check: (t, out) => {
      refused(t, out, ['bind', 'rbind-root', 'move-home'], [EPERM], 'needs CAP_SYS_ADMIN');
      t.match(out, /^mount8=32$/m, 'mount --bind fails (32)');
    },
  },
  {
    key: 'mount-remount',
    claim:
      'remounting the read-only secret, /, /sys or a cgroup hierarchy read-write fails, and unmounting the secret or a masked /proc path fails',
    script: () => String.raw`sc remount-secret 165 s:none s:/sandbox-secrets/codex/auth.json i:0 i:0x20 i:0
sc remount-bind-secret 165 s:none s:/sandbox-secrets/codex/auth.json i:0 i:0x1020 i:0
sc remount-root 165 s:none s:/ i:0 i:0x20 i:0
sc remount-sys 165 s:none s:/sys i:0 i:0x20 i:0
sc remount-cgroup 165 s:none s:${cgroupMount} i:0 i:0x20 i:0
sc umount-secret 166 s:/sandbox-secrets/codex/auth.json i:0
sc umount-secret-detach 166 s:/sandbox-secrets/codex/auth.json i:2
sc umount-proc-sys 166 s:/proc/sys i:2
sc umount-proc-keys 166 s:/proc/keys i:2
umount /sandbox-secrets/codex/auth.json; echo "umount8=$?"
grep -c ' /sandbox-secrets/codex/auth.json ro,' /proc/self/mountinfo
(echo x >> /sandbox-secrets/codex/auth.json) 2>&1; (touch /astest-root-write) 2>&1`,
    check: (t, out) => {
      refused(
        t,
        out,
        ['remount-secret', 'remount-bind-secret', 'remount-root', 'remount-sys', 'remount-cgroup'],
        [EPERM],
        'remount needs CAP_SYS_ADMIN',
      );
      refused(
        t,
        out,
        ['umount-secret', 'umount-secret-detach', 'umount-proc-sys', 'umount-proc-keys'],
        [EPERM],
        'umount needs CAP_SYS_ADMIN',
      );
      t.match(out, /^umount8=32$/m, 'umount(8) fails (32)');
      t.match(out, /^1$/m, 'the secret is still mounted read-only afterwards');
      t.match(out, /auth\.json: (Read-only file system|Permission denied)/, 'and still refuses a write');
      t.match(out, /astest-root-write.*Read-only file system/, '/ is still read-only');
    },
  },
  {
    key: 'mount-api',
    claim: 'the new mount API (fsopen, fspick, open_tree with OPEN_TREE_CLONE, move_mount) is refused',
    script: () => String.raw`d=$(mktemp -d)
sc fsopen 430 s:tmpfs i:0
sc fspick 433 i:-100 s:/sandbox/home i:0
sc open_tree 428 i:-100 s:/sandbox/home i:1
sc move_mount 429 i:-100 s:/sandbox/home i:-100 s:$d i:0`,
    check: (t, out) => refused(t, out, ['fsopen', 'fspick', 'open_tree', 'move_mount'], [EPERM, ENOSYS], 'needs CAP_SYS_ADMIN'),
  },
  {
    key: 'mountinfo',
    claim:
      "/proc/self/mountinfo holds exactly the runtime's own mounts and what the request asks for (its workspace and home read-write from the host directories made for them, the credential and the broker's socket directory read-only), each with its flag",
    script: () => 'cat /proc/self/mountinfo',
    check: (t, out, c) => {
      const mounts = parseMountinfo(out);
      const actual = Object.fromEntries([...mounts].map(([point, m]) => [point, m.flag]));
      t.same(Object.keys(actual).sort(), Object.keys(c.expectedMounts).sort(), 'the destinations are exactly the allowlist');
      t.same(actual, c.expectedMounts, 'each has its flag');
      for (const [point, source] of Object.entries(c.mountSources))
        t.equal(mounts.get(point)?.root, source, `${point} is the host directory made for it`);
      t.notMatch(out, c.credential.path, "the host credential's own path is not a mount source");
    },
  },
];

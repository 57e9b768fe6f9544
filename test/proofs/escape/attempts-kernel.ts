// Attempts on kernel interfaces from inside a probe session: /proc/sys and /sys, the kernel
// log, devices, other privileged system calls, the clock and the hostname (cgroupfs and the
// kernel keyring: attempts-cgroup-keys.ts). A write that must fail writes the value already there (or one the kernel
// rejects), so that a hole shows in the output and changes nothing on the host. (The kernel
// log is never cleared to prove a point: its calls read nothing and set an invalid level.)
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { ociRuntime } from '@agent-sandbox/shared';
import { dmesgRestrict, scOnHost } from './host-controls.js';
import type { ProbeCtx } from './probe-context.js';
import { errno, refused, type Attempt } from './probe-script.js';

const { EPERM, ENOSYS, EINVAL } = errno;
/** Global (not namespaced) sysctls the attempt writes back unchanged; the host checks them after. */
export const globalSysctls = ['kernel/core_pattern', 'kernel/panic', 'vm/overcommit_memory', 'kernel/printk'];
export const readSysctl = (name: string) => readFileSync(`/proc/sys/${name}`, 'utf8');

/** The OCI runtime's default /dev: crun adds the core link (to /proc/kcore, which podman masks). */
const defaultDev = [
  ...(ociRuntime() === 'crun' ? ['core'] : []),
  'fd',
  'full',
  'mqueue',
  'null',
  'ptmx',
  'pts',
  'random',
  'shm',
  'stderr',
  'stdin',
  'stdout',
  'tty',
  'urandom',
  'zero',
];

export const kernelAttempts: Array<Attempt<ProbeCtx>> = [
  {
    key: 'proc-sys',
    claim:
      "writes to /proc/sys (core_pattern, panic, overcommit_memory, printk, the namespaced hostname and ip_forward) fail with EROFS; the host's values stay",
    script: () =>
      [...globalSysctls, 'kernel/hostname', 'net/ipv4/ip_forward']
        .map((f) => `v=$(cat /proc/sys/${f}); (printf '%s\\n' "$v" > /proc/sys/${f}) 2>&1; echo "write ${f}=$?"`)
        .join('\n'),
    check: (t, out, c) => {
      for (const f of [...globalSysctls, 'kernel/hostname', 'net/ipv4/ip_forward']) {
        t.match(out, new RegExp(`^write ${f}=[1-9]`, 'm'), `writing /proc/sys/${f} fails`);
        t.match(out, new RegExp(`/proc/sys/${f}: Read-only file system`), `/proc/sys/${f}: the read-only mount refuses it`);
      }
      for (const f of globalSysctls) t.equal(readSysctl(f), c.host.sysctl[f], `the host's ${f} is unchanged`);
    },
  },
  {
    key: 'sys-write',
    claim: 'writes to /sys (uevent_helper, transparent_hugepage, a network device, a module parameter) fail with EROFS',
    script: () =>
      [
        '/sys/kernel/uevent_helper',
        '/sys/kernel/mm/transparent_hugepage/enabled',
        '/sys/class/net/lo/mtu',
        '/sys/module/printk/parameters/time',
      ]
        .map((f) => `(echo astest-invalid > ${f}) 2>&1; echo "write ${f}=$?"`)
        .join('\n'),
    check: (t, out) => {
      for (const f of [
        '/sys/kernel/uevent_helper',
        '/sys/kernel/mm/transparent_hugepage/enabled',
        '/sys/class/net/lo/mtu',
        '/sys/module/printk/parameters/time',
      ]) {
        t.match(out, new RegExp(`^write ${f}=[1-9]`, 'm'), `writing ${f} fails`);
        t.match(out, new RegExp(`${f}: Read-only file system`), `${f}: the read-only /sys refuses it`);
      }
    },
  },
  {
    key: 'kernel-log',
    claim:
      "the kernel log is out of reach: syslog(2)'s actions that always need CAP_SYSLOG (READ, CONSOLE_LEVEL) answer EPERM whatever dmesg_restrict says (on the host the same calls pass as root and fail with the capability dropped); /proc/kmsg cannot be opened, /dev/kmsg does not exist; with the host's dmesg_restrict 1 dmesg and READ_ALL/SIZE_BUFFER are refused too",
    rootOnly:
      'rootless launcher: its control needs root (syslog(2) asks for CAP_SYSLOG in the initial user namespace, which no user namespace of uid 1000 has)',
    script: () => String.raw`dmesg > /dev/null; echo "dmesg=$?"
if [ -e /dev/kmsg ]; then echo "dev-kmsg present"; else echo "dev-kmsg absent"; fi
head -c 1 /proc/kmsg > /dev/null; echo "proc-kmsg=$?"
echo "dmesg_restrict=$(cat /proc/sys/kernel/dmesg_restrict)"
sc syslog-read 103 i:2 z:16 i:0
sc syslog-console-level 103 i:8 i:0 i:0
sc syslog-read-all 103 i:3 z:4096 i:4096
sc syslog-size 103 i:10 i:0 i:0`,
    check: async (t, out) => {
      // READ with length 0 and CONSOLE_LEVEL with the invalid level 0 change nothing even where allowed.
      refused(t, out, ['syslog-read', 'syslog-console-level'], [EPERM], 'always needs CAP_SYSLOG');
      t.equal(
        await scOnHost(['syslog-console-level', '103', 'i:8', 'i:0', 'i:0']),
        `syslog-console-level errno=${EINVAL}`,
        'control: on the host root gets past the capability check (EINVAL: level 0)',
      );
      // CAP_SYS_ADMIN too: the kernel lets it stand in for CAP_SYSLOG here (with a warning): Debian 12's 6.1 does.
      t.equal(
        await scOnHost(['syslog-console-level', '103', 'i:8', 'i:0', 'i:0'], ['syslog', 'sys_admin']),
        `syslog-console-level errno=${EPERM}`,
        'control: and root without CAP_SYSLOG (nor CAP_SYS_ADMIN, its old stand-in) gets EPERM: the capability decides',
      );
      t.match(out, /^dev-kmsg absent$/m, '/dev/kmsg does not exist');
      t.match(out, /^proc-kmsg=1$/m, '/proc/kmsg cannot be opened');
      const restrict = dmesgRestrict();
      t.match(out, new RegExp(`^dmesg_restrict=${restrict}$`, 'm'), `the session sees the host's dmesg_restrict (${restrict}): one kernel`);
      if (restrict === '1') {
        t.match(out, /^dmesg=1$/m, 'dmesg_restrict 1: dmesg fails');
        t.match(out, /read kernel buffer failed: Operation not permitted/, 'dmesg: EPERM');
        refused(t, out, ['syslog-read-all', 'syslog-size'], [EPERM], 'dmesg_restrict 1: READ_ALL and SIZE_BUFFER need CAP_SYSLOG');
      } else {
        t.comment(`dmesg_restrict is ${restrict} on this host: any user, inside a session or not, may read the kernel log with dmesg`);
      }
    },
  },
  {
    key: 'devices',
    claim:
      'mknod of a block or memory device fails with EPERM; /dev holds only the default nodes; no block device, /dev/mem, /dev/kvm, /dev/fuse or /dev/net/tun exists',
    peer: 'sandbox-runtime "should prevent creation of special file types that could bypass restrictions"',
    script: (c) => String.raw`mknod /tmp/astest-sda b 8 0; echo "mknod-block=$?"
mknod ${c.ws.inside}/.astest/vda b 254 0; echo "mknod-block-workspace=$?"
mknod /tmp/astest-mem c 1 1; echo "mknod-mem=$?"
sc mknod-syscall 133 s:/tmp/astest-kmsg i:0x21a4 i:0x10b
echo "dev=$(ls /dev | tr '\n' ' ')"
echo "block=$(find / -xdev -type b 2>/dev/null | wc -l) $(find /dev -type b | wc -l)"
for d in /dev/mem /dev/kmem /dev/port /dev/kvm /dev/fuse /dev/net/tun /dev/sda /dev/vda /dev/kmsg; do [ -e "$d" ] && echo "present $d"; done; echo "listed"`,
    check: (t, out) => {
      for (const k of ['mknod-block', 'mknod-block-workspace', 'mknod-mem']) t.match(out, new RegExp(`^${k}=1$`, 'm'), `${k} fails`);
      refused(t, out, ['mknod-syscall'], [EPERM], 'needs CAP_MKNOD');
      t.equal(/^dev=(.*)$/m.exec(out)?.[1]?.trim(), defaultDev.join(' '), '/dev holds exactly the default nodes');
      t.match(out, /^block=0 0$/m, 'no block device anywhere');
      t.match(out, /^listed$/m);
      t.notMatch(out, /^present /m, 'no memory, kvm, fuse, tun or disk device');
    },
  },
  {
    key: 'kernel-surface',
    claim:
      'module loading, kexec, bpf, perf_event_open, userfaultfd, open_by_handle_at (the "shocker" escape), iopl/ioperm, swapon, chroot and pivot_root are refused',
    script: () => String.raw`sc finit_module 313 i:0 s: i:0
sc init_module 175 z:16 i:16 s:
sc kexec_load 246 i:0 i:0 z:32 i:0
sc bpf 321 i:0 z:128 i:128
sc perf_event_open 298 z:128 i:0 i:-1 i:-1 i:0
sc userfaultfd 323 i:0
sc open_by_handle_at 304 i:-100 z:16 i:0
sc iopl 172 i:3
sc ioperm 173 i:0 i:1024 i:1
sc swapon 167 s:/tmp/astest-swap i:0
sc chroot 161 s:/tmp
sc pivot_root 155 s:/tmp s:/tmp`,
    check: (t, out) =>
      refused(
        t,
        out,
        [
          'finit_module',
          'init_module',
          'kexec_load',
          'bpf',
          'perf_event_open',
          'userfaultfd',
          'open_by_handle_at',
          'iopl',
          'ioperm',
          'swapon',
          'chroot',
          'pivot_root',
        ],
        [EPERM, ENOSYS],
        'a capability the session does not have',
      ),
  },
  {
    key: 'clock',
    claim: 'setting the clock fails: date -s, clock_settime and settimeofday answer EPERM',
    script: () => String.raw`date -s "@$(date +%s)" > /dev/null; echo "date=$?"
sc clock_settime 227 i:0 t:now
sc settimeofday 164 t:now i:0`,
    check: (t, out) => {
      t.match(out, /^date=1$/m, 'date -s fails');
      t.match(out, /cannot set date: Operation not permitted/, 'with EPERM');
      refused(t, out, ['clock_settime', 'settimeofday'], [EPERM], 'needs CAP_SYS_TIME');
    },
  },
  {
    key: 'hostname',
    claim: "sethostname and setdomainname fail with EPERM, and the hostname inside is the container's, not the host's",
    script: () => String.raw`hostname astest-renamed; echo "hostname-cmd=$?"
sc sethostname 170 s:astest-renamed i:14
sc setdomainname 171 s:astest-renamed i:14
echo "inside=$(hostname)"`,
    check: (t, out, c) => {
      t.match(out, /^hostname-cmd=1$/m, 'hostname NAME fails');
      refused(t, out, ['sethostname', 'setdomainname'], [EPERM], 'needs CAP_SYS_ADMIN');
      const inside = /^inside=(.*)$/m.exec(out)?.[1];
      t.ok(inside && inside !== c.host.hostname, `the hostname inside (${inside}) is not the host's (${c.host.hostname})`);
      t.not(inside, 'astest-renamed', 'and it was not renamed');
      t.equal(os.hostname(), c.host.hostname, "the host's hostname is unchanged");
    },
  },
];

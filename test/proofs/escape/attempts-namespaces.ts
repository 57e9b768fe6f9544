// Attempts on namespaces from inside a probe session: unshare(1) and unshare(2), clone(2) and
// clone3 with CLONE_NEW* flags, setns through nsenter; a plain fork and unshare(CLONE_FS) as
// controls.
import type { ProbeCtx } from './probe-context.js';
import { errno, refused, type Attempt } from './probe-script.js';

const { EPERM, ENOSYS } = errno;

const urmFlags = ['-Urm', '-n', '-p -f', '-i', '-u', '-C', '-m'];

export const namespaceAttempts: Array<Attempt<ProbeCtx>> = [
  {
    key: 'userns-unshare-u',
    claim: 'unshare -U fails: no user namespace, so no fresh full capability set (issue 14 item 2)',
    script: () => String.raw`unshare -U true; echo "unshare-U=$?"
unshare -Ur sh -c 'grep CapEff /proc/self/status'; echo "unshare-Ur=$?"`,
    check: (t, out) => {
      t.match(out, /^unshare-U=1$/m, 'unshare -U exits 1');
      t.match(out, /^unshare-Ur=1$/m, 'unshare -Ur exits 1');
      t.match(out, /unshare failed: Operation not permitted/, 'refused with EPERM');
      t.notMatch(out, /CapEff:\s+0*[1-9a-f]/, 'no capability set is printed');
    },
  },
  {
    key: 'userns-unshare-urm',
    claim: 'unshare -Urm, and unshare of a network, pid, ipc, uts, cgroup or mount namespace, fail with EPERM',
    script: () => urmFlags.map((f) => `m=$(unshare ${f} true 2>&1); echo "unshare ${f}=$? $m"`).join('\n'),
    check: (t, out) => {
      for (const f of urmFlags)
        t.match(
          out,
          new RegExp(`^unshare ${f}=1 unshare: unshare failed: Operation not permitted$`, 'm'),
          `unshare ${f}: the unshare(2) call itself is refused with EPERM`,
        );
    },
  },
  {
    key: 'userns-syscall',
    claim: 'a direct unshare(2) call via perl fails with EPERM for every CLONE_NEW* flag',
    script: () =>
      [
        'for f in user:0x10000000 mnt:0x20000 net:0x40000000 pid:0x20000000 ipc:0x8000000 uts:0x4000000 cgroup:0x2000000 time:0x80 user-mnt:0x10020000; do',
        '  sc "unshare-${f%%:*}" 272 "i:${f#*:}"',
        'done',
        'sc control-unshare-fs 272 i:0x200',
      ].join('\n'),
    check: (t, out) => {
      refused(
        t,
        out,
        ['user', 'mnt', 'net', 'pid', 'ipc', 'uts', 'cgroup', 'time', 'user-mnt'].map((n) => `unshare-${n}`),
        [EPERM],
        'namespace creation is refused',
      );
      t.match(out, /^control-unshare-fs ok=0$/m, 'control: unshare(CLONE_FS), which makes no namespace, still works');
    },
  },
  {
    key: 'userns-clone',
    claim:
      'clone(2) with CLONE_NEWUSER or CLONE_NEWNS fails with EPERM, clone3 answers ENOSYS, setns via nsenter fails; a plain fork still works',
    script: () => String.raw`sc clone-newuser 56 i:0x10000011 i:0 i:0 i:0 i:0
sc clone-newns 56 i:0x20011 i:0 i:0 i:0 i:0
sc clone-newnet 56 i:0x40000011 i:0 i:0 i:0 i:0
sc clone3 435 z:88 i:88
sc control-fork 56 i:17 i:0 i:0 i:0 i:0
nsenter -t 1 -U true; echo "nsenter-U=$?"
nsenter -t 1 -m true; echo "nsenter-m=$?"`,
    check: (t, out) => {
      refused(t, out, ['clone-newuser', 'clone-newns', 'clone-newnet'], [EPERM], 'clone with a CLONE_NEW* flag is refused');
      refused(t, out, ['clone3'], [ENOSYS], 'clone3 is ENOSYS (its flags cannot be filtered)');
      t.match(out, /^control-fork ok=[1-9]\d*$/m, 'control: a plain fork returns a child pid');
      t.match(out, /^nsenter-U=1$/m, 'nsenter into a user namespace fails');
      t.match(out, /^nsenter-m=1$/m, 'nsenter into a mount namespace fails');
    },
  },
];

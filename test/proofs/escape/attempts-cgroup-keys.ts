// Attempts on the kernel's per-session and per-user state from inside a probe session: the
// session's own cgroup (its limits, cgroup.procs, a parent, release_agent) and the host user's
// kernel keyring.
import { v2 } from '../cgroup-view.js';
import { readHostKey } from './host-keyring.js';
import type { ProbeCtx } from './probe-context.js';
import type { Attempt } from './probe-script.js';

/**
 * The session's own limit files inside, relative to /sys/fs/cgroup: on cgroup v1 one read-only
 * mount per hierarchy; on v2 the container's own cgroup through its cgroup namespace.
 */
const cgroupLimitFiles = v2
  ? ['memory.max', 'memory.swap.max', 'pids.max', 'cpu.max']
  : ['memory/memory.limit_in_bytes', 'memory/memory.memsw.limit_in_bytes', 'pids/pids.max', 'cpu/cpu.cfs_quota_us'];
/** The directory inside holding the session's pids controller files (and the cgroup.procs written). */
const pidsDir = v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/pids';
/** A directory inside whose parent would be a cgroup above the session's, if one were reachable. */
const aboveDir = v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/memory';

export const cgroupKeyAttempts: Array<Attempt<ProbeCtx>> = [
  {
    key: 'cgroupfs',
    claim:
      "writing the session's own limits (memory, memory+swap, pids, CPU quota) or cgroup.procs fails with EROFS and the limits stay; no parent cgroup or release_agent is reachable",
    script: () => String.raw`for f in ${cgroupLimitFiles.join(' ')}; do
  before=$(cat /sys/fs/cgroup/$f); err=$( (echo -1 > /sys/fs/cgroup/$f) 2>&1 ); rc=$?; echo "write $f rc=$rc same=$([ "$before" = "$(cat /sys/fs/cgroup/$f)" ] && echo yes || echo no) $err"
done
err=$( (echo $$ > ${pidsDir}/cgroup.procs) 2>&1 ); echo "procs=$? $err"
(echo $$ > ${aboveDir}/../cgroup.procs) 2>&1; echo "parent-procs=$?"
echo "pids-dir=$(ls ${pidsDir} | tr '\n' ' ')"
echo "release_agent=$(find /sys/fs/cgroup -name release_agent | wc -l)"
echo "pids.max=$(cat ${pidsDir}/pids.max)"`,
    check: (t, out, c) => {
      for (const f of cgroupLimitFiles) {
        t.match(
          out,
          new RegExp(`^write ${f} rc=[1-9]\\d* same=yes .*/sys/fs/cgroup/${f}: Read-only file system$`, 'm'),
          `${f}: the read-only mount refuses the write (EROFS) and the value stays`,
        );
      }
      t.match(
        out,
        /^procs=[1-9]\d* .*cgroup\.procs: Read-only file system$/m,
        'joining the own cgroup again fails: the read-only mount refuses cgroup.procs',
      );
      t.match(out, /^parent-procs=[1-9]/m, 'moving into the directory above fails');
      t.notMatch(/^pids-dir=(.*)$/m.exec(out)?.[1] ?? '', /libpod|agent-sandbox|astest/, 'no other cgroup is listed beside the own one');
      t.match(out, /^release_agent=0$/m, 'no release_agent file is reachable');
      t.match(out, new RegExp(`^pids.max=${c.pidsLimit}$`, 'm'), `pids.max is the session's limit (${c.pidsLimit})`);
    },
  },
  {
    key: 'keyring',
    claim:
      "the host user's kernel keyring is out of reach: its keys cannot be found, read, changed or unlinked, and nothing can be linked into it (keyctl, add_key, request_key)",
    script: (c) => `perl "$ASTEST/keys.pl" ${c.hostKey.description}`,
    check: async (t, out, c) => {
      t.notMatch(out, /^search ok=/m, "the host user's key cannot be found by its description");
      t.notMatch(out, /^describe ok=/m, 'nor described');
      t.notMatch(out, new RegExp(c.hostKey.value), 'nor read');
      t.notMatch(out, /^update ok=/m, 'nor changed');
      t.notMatch(out, /^unlink ok=/m, 'nor unlinked');
      t.notMatch(out, /^link ok=/m, "nothing is linked into the host user's keyring");
      t.match(out, /^add_key errno=/m, 'add_key is refused');
      t.match(out, /^request_key errno=/m, 'request_key is refused');
      const host = await readHostKey(c.hostKey.description);
      t.equal(host.value, c.hostKey.value, "the host user's key is still there, unchanged");
      t.same(host.planted, [], "and no keyring from inside is linked into the host user's keyring");
    },
  },
];

// What the preflight reads of a host decides, before anything starts: hosts described through
// the probe (stand-ins for cgroup v2, rootless, missing controllers, no runc, NoNewPrivs, an
// unreadable seccomp profile; this host is cgroup v1 with runc) are refused with 88 or 83, or
// accepted; and this host itself passes with the real probe. The refusals that start real
// processes on this host: preflight-refusals.test.ts.
import t from 'tap';
import { cgroupManager, cgroupMode } from '@agent-sandbox/shared';
import { preflight, realHostProbe, seccompProfilePath, type HostProbe } from '../dist/index.js';

const busybox = 'localhost/agent-sandbox-busybox:latest';
const limits = { memory: '512m', memorySwap: '512m', pids: 64, cpus: 1, cpuShares: 256 };

// ---- other hosts, described through the probe (stand-ins: this host is cgroup v1 with runc) ----
// The committed seccomp profile is read for real, unless the row says this user cannot read it.
function describedHost(
  files: Record<string, string>,
  opts: { uid?: number; executables?: string[]; profileReadable?: boolean } = {},
): HostProbe {
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
    : {
        '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids',
        [`/sys/fs/cgroup/user.slice/user-${uid}.slice/user@${uid}.service/cgroup.controllers`]: controllers,
      };
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
  {
    claim: 'stand-in: rootless on cgroup v2 without a delegated pids controller is refused (88)',
    probe: describedHost(v2('cpu memory', 1500), { uid: 1500 }),
    exitCode: 88,
    code: 'controllers-not-delegated',
  },
  {
    claim: 'stand-in: rootless on cgroup v2 without a user session cgroup is refused (88)',
    probe: describedHost({ '/sys/fs/cgroup/cgroup.controllers': 'cpu memory pids' }, { uid: 1500 }),
    exitCode: 88,
    code: 'controllers-not-delegated',
  },
  {
    claim: 'stand-in: rootful cgroup v2 without the memory controller is refused (88)',
    probe: describedHost(v2('cpu io pids')),
    exitCode: 88,
    code: 'controllers-not-delegated',
  },
  {
    claim: 'stand-in: rootful cgroup v1 without swap accounting is refused (88)',
    probe: describedHost({ '/proc/cgroups': v1Cgroups }),
    exitCode: 88,
    code: 'swap-limit-unsupported',
  },
  {
    claim: 'stand-in: rootful cgroup v1 without the pids hierarchy is refused (88)',
    probe: describedHost({
      '/proc/cgroups': v1Cgroups.replace('pids\t8', 'pids\t0'),
      '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': '',
    }),
    exitCode: 88,
    code: 'controller-missing',
  },
  {
    claim: 'stand-in: cgroup v1 without runc is refused (83: crun cannot start containers there)',
    probe: describedHost(
      { '/proc/cgroups': v1Cgroups, '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': '' },
      { executables: ['/usr/bin/podman', '/usr/bin/crun'] },
    ),
    exitCode: 83,
    code: 'runtime-missing',
  },
  {
    claim: 'stand-in: rootless cgroup v2 under NoNewPrivs is refused (83: newuidmap cannot run)',
    probe: describedHost({ ...v2('cpu memory pids', 1500), '/proc/self/status': 'Name:\tnode\nNoNewPrivs:\t1\n' }, { uid: 1500 }),
    exitCode: 83,
    code: 'no-new-privs-rootless',
  },
  {
    claim: 'stand-in: a rootless caller that cannot read the seccomp profile is refused (83), never run without it',
    probe: describedHost(v2('cpu memory pids', 1500), { uid: 1500, profileReadable: false }),
    exitCode: 83,
    code: 'seccomp-profile-missing',
  },
  {
    claim: 'stand-in: rootless cgroup v2 with memory, pids and cpu delegated is accepted',
    probe: describedHost(v2('cpu memory pids', 1500), { uid: 1500 }),
    exitCode: 0,
  },
  {
    claim: 'stand-in: rootful cgroup v1 with the controllers and swap accounting is accepted',
    probe: describedHost({ '/proc/cgroups': v1Cgroups, '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': '' }),
    exitCode: 0,
  },
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

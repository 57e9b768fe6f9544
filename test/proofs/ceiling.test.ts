// Ceiling proofs against real containers started by bin/sandbox-run: a fork bomb is held at
// --pids-limit while the host keeps forking, a memory bomb is killed (137) at --memory, a CPU
// burner is held to --cpus (measured from cgroup usage), and no container is left behind.
// (cgroup v1 paths: this host; the limits preflight refuses hosts where they would not apply.)
import t from 'tap';
import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import { needs } from '@agent-sandbox/testkit';
import { runPodman } from '@agent-sandbox/shared/podman';
import { busybox, cgroupParent, containerCgroup, debian, ensureImage, runScript } from './session.js';

await ensureImage(busybox);
await ensureImage(debian);
// These read cgroup v1 files; on cgroup v2 the same claims are proved through the launcher
// (tools/agent-sandbox/test/end-reasons-in-the-ledger.test.ts) and in the VM tier.
const v1 = needs({ cgroup: 'v1', root: true, podman: true });

const made: string[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const readNumber = async (file: string) => Number((await readFile(file, 'utf8')).trim().split(/\s+/).pop());
async function dmesg(): Promise<string> {
  return String((await execa('dmesg', [], { reject: false })).stdout);
}

t.test('a fork bomb is held at --pids-limit and the host can still fork during it', v1, async (t) => {
  const parent = cgroupParent(t, 'forkbomb');
  // bash retries a failed fork, so this bomb stays at the ceiling; the sampler uses only
  // builtins (read -t on a fifo is its clock), so it keeps running at the limit too.
  const script = [
    'mkfifo /tmp/tick; exec 3<>/tmp/tick',
    'bomb() { bomb | bomb & }',
    '( bomb ) 2>/dev/null &',
    'for i in $(seq 1 16); do read -t 0.5 x <&3; read c < /sys/fs/cgroup/pids/pids.current; read e < /sys/fs/cgroup/pids/pids.events; echo "sample current=$c events=${e#max }"; done',
    'read m < /sys/fs/cgroup/pids/pids.max; echo "max=$m"',
    'exit 0',
  ].join('\n');
  const running = runScript(t, 'forkbomb', script, {
    image: debian,
    cgroupParent: parent,
    command: ['bash', '-c', script],
    limits: { memory: '512m', memorySwap: '512m', pids: 64, cpus: 1, cpuShares: 256 },
  });
  // Wait (from the host) until the bomb is at the ceiling.
  let atCeiling = 0;
  for (let i = 0; i < 200 && atCeiling < 60; i += 1) {
    const dir = await containerCgroup('pids', parent);
    if (dir) atCeiling = await readNumber(`${dir}/pids.current`).catch(() => 0);
    if (atCeiling < 60) await sleep(100);
  }
  t.ok(atCeiling >= 60 && atCeiling <= 64, `the host sees the container at its ceiling (pids.current ${atCeiling} of 64)`);
  const dir = await containerCgroup('pids', parent);
  t.ok(dir, 'the container cgroup exists during the bomb');
  if (dir) t.equal((await readFile(`${dir}/pids.max`, 'utf8')).trim(), '64', 'pids.max is 64 (host view)');
  // The host forks while the bomb runs; the bomb's count is sampled throughout the forks.
  const t0 = Date.now();
  let forking = true;
  let bombMax = 0;
  const sampling = (async () => {
    while (forking && dir) {
      bombMax = Math.max(bombMax, await readNumber(`${dir}/pids.current`).catch(() => 0));
      await sleep(20);
    }
  })();
  const forks = await Promise.all(Array.from({ length: 20 }, (_, i) => execa('sh', ['-c', `echo host-fork-${i}`], { reject: false })));
  forking = false;
  await sampling;
  t.equal(forks.filter((f) => f.exitCode === 0 && f.stdout === `host-fork-${forks.indexOf(f)}`).length, 20, `20 host processes forked and exited 0 during the bomb (${Date.now() - t0} ms)`);
  if (dir) t.ok(bombMax >= 60, `the bomb was at its ceiling while the host forked (pids.current up to ${bombMax})`);

  const out = await running;
  made.push(out.name);
  t.equal(out.exitCode, 0, 'the container ends normally (nothing is killed by a pids limit)');
  const samples = [...out.stdout.matchAll(/^sample current=(\d+) events=(\d+)$/gm)].map((m) => ({ current: Number(m[1]), events: Number(m[2]) }));
  t.equal(samples.length, 16, 'the sampler inside kept running at the ceiling');
  t.ok(samples.every((s) => s.current <= 64), `inside, pids.current never exceeded 64 (max seen ${Math.max(...samples.map((s) => s.current))})`);
  t.ok(Math.max(...samples.map((s) => s.events)) > 0, 'inside, pids.events counts rejected forks');
  t.match(out.stdout, /^max=64$/m, 'inside, pids.max is 64');
  t.match(await dmesg(), new RegExp(`fork rejected by pids controller in ${parent}/libpod-[0-9a-f]{64}`), 'the kernel log names the container cgroup');
});

t.test('a memory bomb is killed with exit 137 at --memory', v1, async (t) => {
  const parent = cgroupParent(t, 'membomb');
  const script = 'echo "limit=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes) memsw=$(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes)"; exec tail /dev/zero';
  const out = await runScript(t, 'membomb', script, {
    cgroupParent: parent,
    limits: { memory: '32m', memorySwap: '32m', pids: 64, cpus: 1, cpuShares: 256 },
  });
  made.push(out.name);
  t.equal(out.exitCode, 137, 'SIGKILL by the OOM killer');
  t.match(out.stdout, `limit=${32 * 1024 * 1024} memsw=${32 * 1024 * 1024}`, 'inside, memory and memory+swap are both 32m (no swap escape)');
  const peak = await readNumber(`/sys/fs/cgroup/memory${parent}/memory.max_usage_in_bytes`);
  t.ok(peak <= 40 * 1024 * 1024 && peak >= 30 * 1024 * 1024, `the parent's peak (${peak} bytes) is at the 32m limit`);
  t.match(await dmesg(), new RegExp(`oom_memcg=${parent}/libpod-[0-9a-f]{64}.*task=tail`), 'the kernel log names the container cgroup and the bomb');
});

t.test('a CPU burner is held to --cpus 0.5 (cgroup cpuacct usage over 3 s, with slack)', v1, async (t) => {
  const parent = cgroupParent(t, 'cpuburn');
  const script = [
    'mkfifo /tmp/tick; exec 3<>/tmp/tick',
    'read quota < /sys/fs/cgroup/cpu/cpu.cfs_quota_us; read period < /sys/fs/cgroup/cpu/cpu.cfs_period_us; echo "quota=$quota period=$period"',
    'for b in 1 2 3; do (while :; do :; done) & done',
    'read -t 1 x <&3', // warm up
    'read u0 < /sys/fs/cgroup/cpuacct/cpuacct.usage; read t0 rest < /proc/uptime',
    'read -t 3 x <&3',
    'read u1 < /sys/fs/cgroup/cpuacct/cpuacct.usage; read t1 rest < /proc/uptime',
    'echo "usage0=$u0 usage1=$u1 uptime0=$t0 uptime1=$t1"',
    'exit 0',
  ].join('\n');
  const hostBefore: { usage?: number; at?: bigint } = {};
  const running = runScript(t, 'cpuburn', script, { cgroupParent: parent, limits: { memory: '64m', memorySwap: '64m', pids: 64, cpus: 0.5, cpuShares: 256 } });
  // Until the container's cgroup exists (a loaded host starts it late), then past the warm-up.
  let dir: string | undefined;
  for (let i = 0; i < 300 && !dir; i += 1) {
    dir = await containerCgroup('cpuacct', parent);
    if (!dir) await sleep(100);
  }
  await sleep(1000);
  if (dir) {
    hostBefore.usage = await readNumber(`${dir}/cpuacct.usage`);
    hostBefore.at = process.hrtime.bigint();
  }
  await sleep(2000);
  let hostRatio: number | undefined;
  if (dir && hostBefore.usage !== undefined && hostBefore.at !== undefined) {
    const usage = await readNumber(`${dir}/cpuacct.usage`).catch(() => undefined);
    if (usage !== undefined) hostRatio = (usage - hostBefore.usage) / Number(process.hrtime.bigint() - hostBefore.at);
  }
  const out = await running;
  made.push(out.name);
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stdout, /^quota=50000 period=100000$/m, 'inside, the CFS quota is half a period');
  const m = /usage0=(\d+) usage1=(\d+) uptime0=([\d.]+) uptime1=([\d.]+)/.exec(out.stdout);
  t.ok(m, 'the burner reported its usage');
  if (m) {
    const cpus = (Number(m[2]) - Number(m[1])) / 1e9 / (Number(m[4]) - Number(m[3]));
    // Three busy loops on this host would use every CPU it has without the quota.
    t.ok(cpus <= 0.6, `inside: ${cpus.toFixed(3)} CPUs used, at most 0.5 + slack`);
    // The lower bound only shows the burner ran (idle is ~0); under other tests' load it can get less than its quota.
    t.ok(cpus >= 0.2, `inside: ${cpus.toFixed(3)} CPUs used: the burner did burn`);
  }
  t.ok(hostRatio !== undefined, 'the host read the container cgroup while it ran');
  if (hostRatio !== undefined) t.ok(hostRatio <= 0.6 && hostRatio >= 0.2, `host view: ${hostRatio.toFixed(3)} CPUs`);
});

t.test('every container is gone afterwards', v1, async (t) => {
  t.equal(made.length, 3, 'three ceiling containers ran');
  const ps = await runPodman(['ps', '-a', '--format', '{{.Names}}']);
  for (const name of made) t.notOk(ps.stdout.split('\n').includes(name), `${name} is gone`);
  for (const name of made) t.equal((await runPodman(['container', 'exists', name], { expect: 'any' })).exitCode, 1, `podman says ${name} does not exist`);
});

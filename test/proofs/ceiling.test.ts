// Ceiling proofs against real containers started by bin/sandbox-run, on cgroup v1 (this host)
// and v2 (the VM tier's guest), as root and rootless: a fork bomb is held at --pids-limit while
// the host keeps forking, a memory bomb is killed (137) at --memory, a CPU burner is held to
// --cpus (measured from cgroup usage), each limit read from inside, the bombs attributed the
// way the launcher attributes a session (podman-attrib: kernel log on v1, counters on v2), and
// no container is left behind.
import t, { type Test } from 'tap';
import { execa } from 'execa';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { runPodman } from '@agent-sandbox/shared/podman';
import type { PodmanAttribOutput } from '@agent-sandbox/shared/schemas/podman-attrib';
import { containerCgroupDir, tempDir, testCgroupParent } from '@agent-sandbox/testkit';
import { busybox, debian, ensureImage, runAttributed, runScript } from './session.js';
import { forkBombScript, hostForksDuringBomb, untilAtCeiling } from './fork-bomb.js';
import { cpuController, cpuQuotaScript, cpuUsageScript, files, hostCpuFile, hostCpuUsage, memoryLimitScript, v2 } from './cgroup-view.js';

await ensureImage(busybox);
await ensureImage(debian);

const made: string[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rootful = process.geteuid?.() === 0;
// The kernel log is root's (dmesg_restrict 1 on Debian); rootless attribution rests on counters.
const kernelLog = rootful ? false : 'the kernel log needs CAP_SYSLOG (dmesg_restrict=1); rootless attribution is proved from the counters';
async function dmesg(): Promise<string> {
  return String((await execa('dmesg', [], { reject: false })).stdout);
}

/**
 * The peak names what it counts. The parent's pids.peak also counts conmon, which podman moves
 * in: a move is never refused (the kernel checks pids.max on fork and clone only), so under
 * systemd the slice read 65 while no fork inside ever passed 64. conmon's task is taken out.
 */
function peakIsTheContainers(t: Test, attribution: PodmanAttribOutput, insideMax: number): void {
  const peak = attribution.peak.pids;
  const parent = attribution.evidence.cgroup.counters['pids.peak'];
  t.ok(
    peak !== null && peak <= 64 && peak >= insideMax - 1,
    `the ledger's peak (${peak}) is the container's (inside at most ${insideMax}), not the parent's with conmon (${parent})`,
  );
  t.match(
    attribution.evidence.cgroup.pidsPeakBasis,
    /pids\.peak less conmon/,
    `the basis says what it counts: ${attribution.evidence.cgroup.pidsPeakBasis}`,
  );
}

t.test('a fork bomb is held at --pids-limit, the host can still fork during it, and the end is attributed pids-limit', async (t) => {
  const samples = 8;
  // The host releases the bomb (a file in a read-only mount) once it has looked, so the bomb is
  // at its ceiling for as long as the host needs, however slow the machine.
  const hold = await tempDir(t, 'astest-forkbomb-hold-');
  await chmod(hold, 0o755);
  const script = forkBombScript(samples);
  const limits = { memory: '512m', memorySwap: '512m', pids: 64, cpus: 1, cpuShares: 256 };
  const mounts = [{ source: hold, destination: '/sandbox/hold', readOnly: true }];
  // Under the VM tier's CPU emulation the sampler gets a sliver of CPU beside 60 retrying forks
  // (measured: 6 samples in 120 s), so it takes fewer samples and the run may take minutes.
  const session = runAttributed(t, 'forkbomb', script, { image: debian, command: ['bash', '-c', script], limits, mounts }, 900_000);
  try {
    // Wait (from the host) until the bomb is at the ceiling.
    const { atCeiling, dir } = await untilAtCeiling((await session.prepared).layout.dirs.pids, session.done);
    t.ok(atCeiling >= 60 && atCeiling <= 64, `the host sees the container at its ceiling (pids.current ${atCeiling} of 64)`);
    t.ok(dir, 'the container cgroup exists during the bomb');
    if (dir) t.equal((await readFile(`${dir}/pids.max`, 'utf8')).trim(), '64', 'pids.max is 64 (host view)');
    // The host forks while the bomb runs; the bomb's count is sampled throughout the forks.
    const { forks, ms, bombMin } = await hostForksDuringBomb(dir);
    t.equal(
      forks.filter((f, i) => f.exitCode === 0 && f.stdout === `host-fork-${i}`).length,
      20,
      `20 host processes forked and exited 0 during the bomb (${ms} ms)`,
    );
    if (dir) t.ok(bombMin >= 60, `the bomb stayed at its ceiling while the host forked (pids.current never below ${bombMin})`);
  } finally {
    // Whatever happened above, the bomb ends (its container would otherwise wait for the timeout).
    await writeFile(`${hold}/release`, '');
  }

  const { out, attribution } = await session.done;
  made.push(out.name);
  t.equal(out.exitCode, 0, 'the container ends normally (nothing is killed by a pids limit)');
  const seen = [...out.stdout.matchAll(/^sample current=(\d+) events=(\d+)$/gm)].map((m) => ({
    current: Number(m[1]),
    events: Number(m[2]),
  }));
  t.equal(seen.length, samples, 'the sampler inside kept running at the ceiling');
  t.ok(
    seen.every((s) => s.current <= 64),
    `inside, pids.current never exceeded 64 (max seen ${Math.max(...seen.map((s) => s.current))})`,
  );
  t.ok(Math.max(...seen.map((s) => s.events)) > 0, 'inside, pids.events counts rejected forks');
  t.match(out.stdout, /^max=64$/m, 'inside, pids.max is 64');
  peakIsTheContainers(t, attribution, Math.max(...seen.map((s) => s.current)));
  t.equal(attribution.reason, 'pids-limit', `attributed pids-limit: ${attribution.evidence.basis}`);
  t.match(
    attribution.evidence.basis,
    /^kernel log: cgroup: fork rejected by pids controller/,
    "as root the kernel log, read first, names the session's cgroup",
    { skip: kernelLog },
  );
  t.match(
    await dmesg(),
    new RegExp(`fork rejected by pids controller in ${escape(attribution.evidence.kernelLog.match)}/libpod-[0-9a-f]{64}`),
    'the kernel log names the container cgroup',
    { skip: kernelLog },
  );
});

t.test('a memory bomb is killed with exit 137 at --memory and attributed oom-killed', async (t) => {
  const script = `${memoryLimitScript}; exec tail /dev/zero`;
  const session = runAttributed(t, 'membomb', script, { limits: { memory: '32m', memorySwap: '32m', pids: 64, cpus: 1, cpuShares: 256 } });
  const { out, attribution } = await session.done;
  made.push(out.name);
  t.equal(out.exitCode, 137, 'SIGKILL by the OOM killer');
  t.match(out.stdout, `limit=${32 * 1024 * 1024} swap=0`, 'inside, memory is 32m and no swap beyond it (no swap escape)');
  t.equal(attribution.reason, 'oom-killed', `attributed oom-killed: ${attribution.evidence.basis}`);
  t.match(attribution.evidence.basis, /^kernel log: oom-kill:/, "as root the kernel log, read first, names the session's cgroup", {
    skip: kernelLog,
  });
  const peak = attribution.peak.memoryBytes ?? 0;
  t.ok(peak <= 40 * 1024 * 1024 && peak >= 30 * 1024 * 1024, `the parent's peak (${peak} bytes) is at the 32m limit`);
  if (v2)
    t.ok(
      (attribution.evidence.cgroup.counters['memory.events:oom_kill'] ?? 0) >= 1,
      "the parent's memory.events counts the kill (v2: its descendants' events)",
    );
  t.match(
    await dmesg(),
    new RegExp(`oom_memcg=${escape(attribution.evidence.kernelLog.match)}/libpod-[0-9a-f]{64}.*task=tail`),
    'the kernel log names the container cgroup and the bomb',
    { skip: kernelLog },
  );
});

t.test('--memory 256m --pids 64 --cpus 1.5 are the limits inside: memory.max, pids.max and the CPU quota', async (t) => {
  const script = `${memoryLimitScript}; read p < ${files.pidsMax}; echo "pids=$p"; ${cpuQuotaScript}; echo "quota=$quota period=$period"`;
  const out = await runScript(t, 'limits', script, {
    image: debian,
    command: ['bash', '-c', script],
    limits: { memory: '256m', memorySwap: '256m', pids: 64, cpus: 1.5, cpuShares: 256 },
  });
  made.push(out.name);
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stdout, /^limit=268435456 swap=0$/m, 'memory limit 268435456 bytes, no swap beyond it');
  t.match(out.stdout, /^pids=64$/m, 'pids.max 64');
  t.match(out.stdout, /^quota=150000 period=100000$/m, 'a quota of 1.5 periods');
});

t.test('a CPU burner is held to --cpus 0.5 (cgroup CPU usage over 3 s, with slack)', async (t) => {
  const parent = testCgroupParent(t, 'cpuburn');
  const script = [
    'mkfifo /tmp/tick; exec 3<>/tmp/tick',
    cpuQuotaScript,
    'echo "quota=$quota period=$period"',
    'for b in 1 2 3; do (while :; do :; done) & done',
    'read -t 1 x <&3', // warm up
    `${cpuUsageScript('u0')}; read t0 rest < /proc/uptime`,
    'read -t 3 x <&3',
    `${cpuUsageScript('u1')}; read t1 rest < /proc/uptime`,
    'echo "usage0=$u0 usage1=$u1 uptime0=$t0 uptime1=$t1"',
    'exit 0',
  ].join('\n');
  const hostBefore: { usage?: number; at?: bigint } = {};
  const running = runScript(t, 'cpuburn', script, {
    image: debian,
    command: ['bash', '-c', script],
    cgroupParent: parent.arg,
    limits: { memory: '64m', memorySwap: '64m', pids: 64, cpus: 0.5, cpuShares: 256 },
  });
  let dir: string | undefined;
  for (const deadline = Date.now() + 600_000; Date.now() < deadline && !dir;) {
    dir = await containerCgroupDir(parent.dir(cpuController));
    if (!dir) await sleep(100);
  }
  await sleep(1500);
  if (dir) {
    hostBefore.usage = hostCpuUsage(await readFile(`${dir}/${hostCpuFile}`, 'utf8'));
    hostBefore.at = process.hrtime.bigint();
  }
  await sleep(2000);
  let hostRatio: number | undefined;
  if (dir && hostBefore.usage !== undefined && hostBefore.at !== undefined) {
    const usage = await readFile(`${dir}/${hostCpuFile}`, 'utf8').then(hostCpuUsage, () => undefined);
    if (usage !== undefined) hostRatio = (usage - hostBefore.usage) / Number(process.hrtime.bigint() - hostBefore.at);
  }
  const out = await running;
  made.push(out.name);
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stdout, /^quota=50000 period=100000$/m, 'inside, the CPU quota is half a period');
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

t.test('every container is gone afterwards', async (t) => {
  t.equal(made.length, 4, 'four ceiling containers ran');
  const ps = await runPodman(['ps', '-a', '--format', '{{.Names}}']);
  for (const name of made) t.notOk(ps.stdout.split('\n').includes(name), `${name} is gone`);
  for (const name of made)
    t.equal((await runPodman(['container', 'exists', name], { expect: 'any' })).exitCode, 1, `podman says ${name} does not exist`);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// What the soak prints (soak.mjs measures): each figure beside what it is compared with.
import { median } from './common.mjs';

/** A latency distribution (soak.mjs's dist) in one line. */
const fmt = (d) =>
  `n ${d.n}, p50 ${d.p50.toFixed(1)} ms, p90 ${d.p90.toFixed(1)}, p99 ${d.p99.toFixed(1)}, max ${d.max.toFixed(1)} ms, ${d.over1s} at or over 1 s`;

/** The figures issues 25 and 35 set bounds on, each beside its bound (issue 35's where it replaced 25's), in one line. */
export function reportBounds(n, run, checked, left, time) {
  const right = n - checked.wrong.length;
  const cpu = time.containerCpuS > 0 ? (time.launcherCpuS / time.containerCpuS).toFixed(2) : 'n/a';
  console.log(
    `   bounds: launchers' CPU / containers' CPU ${cpu} (at most 1.5); peak private memory per launcher max ${run.memory.privateMaxMiB.toFixed(1)} MiB (at most 24; RSS ${run.memory.maxMiB.toFixed(1)} MiB, node's shared text included); host latency max ${run.latency.during.max.toFixed(0)} ms (under 1 000); reasons right ${right}/${n}; left ${left.total}`,
  );
}

/** Where the session's time and CPU went. */
export function reportTime(time) {
  const line = (p) =>
    Object.entries(p)
      .map(([k, v]) => `${k} ${(v.median / 1000).toFixed(1)} s (max ${(v.max / 1000).toFixed(1)})`)
      .join(', ');
  console.log(`   where the time went (podman's events), sessions that exit: ${line(time.exits)}`);
  console.log(
    `   CPU: the launchers and what they waited for (podman's client, flock, du) ${time.launcherCpuS.toFixed(1)} s, the containers ${time.containerCpuS.toFixed(1)} s (conmon, podman's cleanup and the sentinels not counted)`,
  );
  console.log(
    `   container CPU seconds (ledger peak), median by kind: ${Object.entries(time.cpu)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(', ')}`,
  );
}

/** The soak's main figures: its duration and memory, each kind's walls, the reasons against those expected, what was left, the host's latency. */
export function report(n, egressMode, kinds, run, checked, left, load, sessions) {
  console.log(`\n7. soak: ${n} sessions at once through agent-sandbox run (egress ${egressMode}), each its own workspace`);
  console.log(
    `   all ended in ${(run.total / 1000).toFixed(1)} s; launcher peak RSS max ${run.memory.maxMiB.toFixed(1)} MiB, median ${run.memory.medianMiB.toFixed(1)} MiB, sum of the ${n} peaks ${run.memory.sumMiB.toFixed(0)} MiB`,
  );
  console.log(
    `   launcher peak private memory (not shared with other node processes) max ${run.memory.privateMaxMiB.toFixed(1)} MiB, median ${run.memory.privateMedianMiB.toFixed(1)} MiB, sum ${run.memory.privateSumMiB.toFixed(0)} MiB`,
  );
  for (const k of kinds) {
    const walls = sessions.filter((s) => s.kind === k.kind).map((s) => s.result.wall);
    if (walls.length)
      console.log(
        `   ${k.kind.padEnd(12)} x${String(walls.length).padEnd(3)} ${k.flags.join(' ').padEnd(16)} expect ${k.expect.padEnd(11)} wall median ${(median(walls) / 1000).toFixed(1)} s, max ${(Math.max(...walls) / 1000).toFixed(1)} s`,
      );
  }
  const reasons = [...new Set([...Object.keys(checked.expected), ...Object.keys(checked.got)])];
  console.log(`   reason        expected  got`);
  for (const r of reasons)
    console.log(`   ${r.padEnd(14)} ${String(checked.expected[r] ?? 0).padStart(6)} ${String(checked.got[r] ?? 0).padStart(5)}`);
  console.log(
    `   ledger: ${checked.lines} lines for ${n} sessions; exactly one each: ${checked.oneEach ? 'yes' : 'NO'}; lines of other sessions: ${checked.strangers}`,
  );
  for (const w of checked.wrong)
    console.log(
      `   UNEXPECTED ${w.id} (${w.kind}): ${w.lines} line(s), reason ${w.reason}, exit ${w.exitCode}, launcher exit ${w.launcherExit}, egress ${w.egress}: ${w.message ?? ''}`,
    );
  console.log(
    `   left afterwards: ${Object.entries(left.count)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')} (total ${left.total})`,
  );
  for (const [k, v] of Object.entries(left.left))
    if (Array.isArray(v) && v.length)
      console.log(
        `     ${k}: ${v
          .slice(0, 5)
          .map((x) => (typeof x === 'string' ? x : `${x.pid} ${x.cmd}`))
          .join('; ')}`,
      );
  console.log(`   host latency, sh -c true every 100 ms: before (5 s) ${fmt(run.latency.before)}`);
  console.log(
    `                                         during      ${fmt(run.latency.during)}${run.latency.failed ? `; ${run.latency.failed} failed` : ''}`,
  );
  console.log(
    `   the slowest during: ${run.latency.worst.map((w) => `${w.ms.toFixed(0)} ms at ${w.atS.toFixed(1)} s`).join(', ')} (seconds after the sessions were started)`,
  );
  console.log(`   load average: before ${load.before}, after ${load.after}`);
}

// Section 9: floods of what crosses back to the host (issue 24), each a session through the
// launcher, for --flood-seconds (default 300):
//   - CONNECTs to a new name each time, and to one denied name, on 1 000 connections at once
//     straight to the broker's socket, and to a new name each time through the session's relay
//     (socat on 127.0.0.1:3128, where HTTPS_PROXY points, at most half of --pids connections at
//     once; the rest wait in its listen queue): the launcher's RSS and CPU over time, the attempt
//     log's size over time, the ledger line's size, the session's end;
//   - empty files in a loop under the default --disk (8g: 524 288 files) until the ceiling, and
//     under --disk 1g several times: the overshoot of the file ceiling at the decision and after
//     the stop, and the launcher's RSS.
// Figures only, never pass/fail.
import { readdirSync, readFileSync, rmSync, statSync, copyFileSync, chownSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { bin, median, options, repo, sleep, started, tag } from './common.mjs';
import { base, env, flags, ledgerLines, makeRoot, plainWorkspace } from './fixture.mjs';

const fixtures = path.join(repo, 'test', 'proofs', 'fixtures', 'escape');
const kib = (status, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);

/** One session with `agentArgs` under node; samples the launcher and the attempt log every second. */
async function floodSession(root, id, ledger, extra, agentArgs) {
  const ws = plainWorkspace(root, id);
  for (const f of ['egress-flood.js', 'files-flood.js']) copyFileSync(path.join(fixtures, f), path.join(ws, f));
  chownSync(ws, 1000, 1000);
  // The bench's flags with room for 1 000 sockets and a node loop: 1g of memory, 256 pids.
  const own = flags(root, id, ledger).map((v, i, all) => (all[i - 1] === '--memory' ? '1g' : all[i - 1] === '--pids' ? '256' : v));
  const args = ['run', ...own, ...extra, '--agent-bin', 'node', '--', ...agentArgs(`/sandbox/workspaces/${id}`)];
  const run = started(bin('agent-sandbox'), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  run.child.stdout.on('data', (d) => (stdout = `${stdout}${d}`.slice(-4096)));
  const egressDir = path.join(path.dirname(ledger), 'egress');
  const samples = [];
  let peakMiB = 0;
  let exited = false;
  void run.done.then(() => (exited = true));
  const t0 = Date.now();
  while (!exited) {
    try {
      const status = readFileSync(`/proc/${run.child.pid}/status`, 'utf8');
      const stat = readFileSync(`/proc/${run.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      const log = readdirSync(egressDir).find((n) => n.startsWith(`${id}-`));
      peakMiB = Math.max(peakMiB, kib(status, 'VmHWM') / 1024);
      samples.push({
        s: Math.round((Date.now() - t0) / 1000),
        rssMiB: kib(status, 'VmRSS') / 1024,
        cpuS: (Number(stat[11]) + Number(stat[12])) / 100,
        logBytes: log ? statSync(path.join(egressDir, log)).size : 0,
      });
    } catch {
      // not started yet, or gone
    }
    await sleep(1000);
  }
  const end = await run.done;
  const line = ledgerLines(ledger).find((l) => l.sessionId === id);
  const lineBytes = readFileSync(ledger, 'utf8')
    .split('\n')
    .filter((l) => l.includes(`"sessionId":"${id}"`))
    .map((l) => Buffer.byteLength(l) + 1);
  const left = Number(spawnSync('du', ['-s', '--inodes', ws]).stdout.toString().split(/\s/)[0]);
  rmSync(ws, { recursive: true, force: true });
  return { end, stdout, line, lineBytes, samples, peakMiB, left, wall: Date.now() - t0 };
}

/** Every `step`-th sample as "t s: RSS MiB, CPU s, log KiB". */
function overTime(samples, step) {
  return samples
    .filter((x, i) => i % step === 0 || i === samples.length - 1)
    .map((x) => `${x.s}s ${x.rssMiB.toFixed(0)}MiB ${x.cpuS.toFixed(1)}cpu ${(x.logBytes / 1024).toFixed(0)}KiB`)
    .join(' | ');
}

/** The floods `--floods` names: straight to the broker's socket, or through the relay. */
const egressCases = [
  { name: 'distinct', mode: 'distinct', target: [] },
  { name: 'identical', mode: 'identical', target: [] },
  { name: 'relay', mode: 'distinct', target: ['tcp:127.0.0.1:3128'] },
];

async function egressFloods(root, ledger, seconds) {
  const out = {};
  for (const { name, mode, target } of egressCases.filter((c) => options.floods.has(c.name))) {
    const r = await floodSession(root, `${tag}-f${name}`, ledger, ['--timeout', `${seconds + 120}s`], (inside) => [
      `${inside}/egress-flood.js`,
      mode,
      String(seconds),
      '1000',
      ...target,
    ]);
    const s = r.line?.egress?.summary ?? {};
    const sent = /flood sent=(\d+)/.exec(r.stdout)?.[1];
    const statuses = /statuses=(\S*)/.exec(r.stdout)?.[1];
    const how = name === 'relay' ? 'distinct names through the relay' : `${mode} names`;
    console.log(
      `   ${how}, ${seconds} s: ${r.line?.reason} (exit ${r.end.code}); ${sent} sent (answers ${statuses}), ${s.attempts} counted (${s.rate?.delayed} paced at ${s.rate?.perSecond}/s, ${s.refused?.find((x) => x.rule === 'too-many-connections')?.count ?? 0} refused unread); ledger line ${r.lineBytes.join(', ')} B; attempt log ${s.log?.bytes} B${s.log?.capped ? ' (capped)' : ''}; launcher peak ${r.peakMiB.toFixed(0)} MiB, CPU ${r.samples.at(-1)?.cpuS.toFixed(1)} s in ${(r.wall / 1000).toFixed(0)} s`,
    );
    console.log(`     over time: ${overTime(r.samples, Math.max(1, Math.round(seconds / 10)))}`);
    out[name] = {
      reason: r.line?.reason,
      statuses,
      sent: Number(sent),
      attempts: s.attempts,
      rate: s.rate,
      log: s.log,
      lineBytes: r.lineBytes,
      peakMiB: r.peakMiB,
      samples: r.samples,
      wall: r.wall,
    };
  }
  return out;
}

async function filesFloods(root, ledger, seconds) {
  const n = Math.max(3, Math.ceil(options.runs / 3));
  const runs = [];
  for (let i = 0; i < n; i += 1) {
    const r = await floodSession(root, `${tag}-files1g-${i}`, ledger, ['--disk', '1g'], (inside) => [
      `${inside}/files-flood.js`,
      `${inside}/flood`,
    ]);
    runs.push({ reason: r.line?.reason, disk: r.line?.evidence?.disk, left: r.left, peakMiB: r.peakMiB, wall: r.wall });
  }
  const limit = runs[0]?.disk?.limitFiles ?? 65_536;
  const atDecision = runs.map((r) => (r.disk?.writtenFiles ?? NaN) - limit);
  const left = runs.map((r) => r.left - limit);
  console.log(
    `   empty files under --disk 1g (ceiling ${limit}), ${n} sessions: over at the decision median ${median(atDecision)} (max ${Math.max(...atDecision)}), left after the stop median ${median(left)} (max ${Math.max(...left)}); walks of ${runs.map((r) => r.disk?.walkMs).join(', ')} ms; ${runs.map((r) => `${r.reason}/${r.disk?.exceeded}`).join(' ')}; launcher peak ${Math.max(...runs.map((r) => r.peakMiB)).toFixed(0)} MiB`,
  );
  const big = await floodSession(root, `${tag}-files8g`, ledger, ['--timeout', `${seconds}s`], (inside) => [
    `${inside}/files-flood.js`,
    `${inside}/flood`,
  ]);
  const d = big.line?.evidence?.disk ?? {};
  const outcome =
    big.line?.reason === 'disk-limit'
      ? `${d.writtenFiles} at the decision (+${d.writtenFiles - d.limitFiles}), ${big.left} left`
      : `the ceiling not reached: ${d.writtenFiles} made`;
  console.log(
    `   empty files under the default --disk (ceiling ${d.limitFiles}), at most ${seconds} s: ${big.line?.reason} after ${(big.wall / 1000).toFixed(0)} s, ${outcome}; launcher peak ${big.peakMiB.toFixed(0)} MiB`,
  );
  console.log(`     over time: ${overTime(big.samples, Math.max(1, Math.round(big.samples.length / 10)))}`);
  return {
    limit,
    runs,
    atDecision,
    left,
    default: { reason: big.line?.reason, disk: d, left: big.left, peakMiB: big.peakMiB, samples: big.samples, wall: big.wall },
  };
}

export async function floods() {
  const seconds = options.floodSeconds;
  const root = makeRoot('s9');
  const ledger = path.join(base, 'state', 'floods.jsonl');
  console.log(`\n10. floods (${seconds} s each): the broker with 1 000 connections at once, then empty files`);
  const egress = await egressFloods(root, ledger, seconds);
  const files = options.floods.has('files') ? await filesFloods(root, ledger, seconds) : undefined;
  return { seconds, egress, files };
}

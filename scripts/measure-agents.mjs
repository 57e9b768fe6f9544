#!/usr/bin/env node
// Measures real agent sessions with podman-attrib (through the launcher's ledger) and derives
// sandbox-run's default limits from them. Each run is the demo session (scripts/demo.sh): the
// real CLI in the agents image reads a failing project, edits it, runs its tests with node
// inside the container and commits, against the scripted model server on the session's loopback.
//
// Usage (root, after scripts/setup.sh): node scripts/measure-agents.mjs [--runs N] [--runtime codex|claude|both]
// Prints a Markdown report on stdout (paste it into the README); progress on stderr.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
};
const runs = Number(arg('runs', '5'));
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: expected a positive integer, got ${arg('runs')}`);
const which = arg('runtime', 'both');
const runtimes = which === 'both' ? ['codex', 'claude'] : [which];

function stats(values) {
  const v = [...values].sort((a, b) => a - b);
  return { min: v[0], median: v[Math.floor((v.length - 1) / 2)], max: v[v.length - 1] };
}

const mib = (b) => (b / 2 ** 20).toFixed(1);
const pow2 = (n) => 2 ** Math.ceil(Math.log2(n));

/** The rule, in one place: the numbers the README states follow from the measured maxima. */
export function deriveLimits(max) {
  const gib = 2 ** 30;
  const memoryGiB = Math.max(1, pow2((16 * max.memoryBytes) / gib));
  return {
    memory: `${memoryGiB}g`,
    memorySwap: `${memoryGiB}g`,
    pids: Math.max(256, pow2(8 * max.pids)),
    cpus: Math.max(2, Math.ceil(2 * max.cpuPerWall)),
    cpuShares: 512,
  };
}

function report(lines) {
  const ran = lines.filter((l) => l.outcome === 'ran' && l.exitCode === 0);
  if (ran.length !== lines.length) throw new Error(`${lines.length - ran.length} of ${lines.length} sessions did not finish with exit 0`);
  const out = [];
  out.push(
    `Measured ${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} CPUs, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ` +
      `podman-attrib peaks of the whole container (cgroup max usage, pids peak, cpuacct), ${runs} run(s) per CLI:`,
    '',
  );
  out.push(
    '| CLI | runs | peak memory MiB (min / median / max) | peak pids | CPU s | wall s | CPU s per wall s (max) |',
    '|---|---|---|---|---|---|---|',
  );
  const all = { memoryBytes: 0, pids: 0, cpuPerWall: 0 };
  for (const runtime of runtimes) {
    const rows = ran.filter((l) => l.runtime === runtime);
    const wall = rows.map((l) => (Date.parse(l.endedAt) - Date.parse(l.startedAt)) / 1000);
    const mem = stats(rows.map((l) => l.peak.memoryBytes));
    const pids = stats(rows.map((l) => l.peak.pids));
    const cpu = stats(rows.map((l) => l.peak.cpuSeconds));
    const w = stats(wall);
    const perWall = Math.max(...rows.map((l, i) => l.peak.cpuSeconds / wall[i]));
    all.memoryBytes = Math.max(all.memoryBytes, mem.max);
    all.pids = Math.max(all.pids, pids.max);
    all.cpuPerWall = Math.max(all.cpuPerWall, perWall);
    out.push(
      `| ${runtime} | ${rows.length} | ${mib(mem.min)} / ${mib(mem.median)} / ${mib(mem.max)} | ${pids.min} / ${pids.median} / ${pids.max} | ` +
        `${cpu.min} / ${cpu.median} / ${cpu.max} | ${w.min.toFixed(2)} / ${w.median.toFixed(2)} / ${w.max.toFixed(2)} | ${perWall.toFixed(2)} |`,
    );
  }
  const limits = deriveLimits(all);
  out.push(
    '',
    `Derived defaults: memory ${limits.memory}, memory-swap ${limits.memorySwap}, pids ${limits.pids}, cpus ${limits.cpus}, cpu-shares ${limits.cpuShares}`,
    '',
  );
  return `${out.join('\n')}\n`;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-sandbox-measure-'));
const ledger = path.join(dir, 'ledger.jsonl');
try {
  for (let i = 1; i <= runs; i++) {
    for (const runtime of runtimes) {
      process.stderr.write(`measure: ${runtime} run ${i}/${runs}\n`);
      execFileSync('bash', [path.join(repo, 'scripts/demo.sh'), '--runtime', runtime, '--ledger', ledger], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    }
  }
  const lines = readFileSync(ledger, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  process.stdout.write(report(lines));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

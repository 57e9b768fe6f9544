#!/usr/bin/env node
// The host's responsiveness, seen by an unrelated program: starts `sh -c true` again and again
// (a pause of <interval> ms between) and records how long each took from spawn to exit. Runs as
// its own process, so the bench's own event loop is not in the figure. Stops on SIGTERM and
// prints the figures as one JSON document: [{at, ms}], `at` in ms since the probe started.
//
//   node scripts/bench/probe.mjs [interval-ms]
import { spawnSync } from 'node:child_process';

const interval = Number(process.argv[2] ?? 100);
const now = () => Number(process.hrtime.bigint()) / 1e6;
const start = now();
const samples = [];
let stop = false;
process.on('SIGTERM', () => (stop = true));

while (!stop) {
  const t0 = now();
  const r = spawnSync('/bin/sh', ['-c', 'true'], { stdio: 'ignore', env: { PATH: '/usr/bin:/bin' } });
  samples.push({ at: Math.round(t0 - start), ms: now() - t0, ...(r.status === 0 ? {} : { status: r.status ?? r.signal }) });
  await new Promise((resolve) => setTimeout(resolve, interval));
}
process.stdout.write(`${JSON.stringify(samples)}\n`);

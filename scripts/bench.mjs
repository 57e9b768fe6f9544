#!/usr/bin/env node
// pnpm bench: what a session and each executable cost, side by side with baselines measured in
// the same run (medians of interleaved runs, ratios printed, never pass/fail). Needs root
// (rootful podman, as the launcher tests), the built tools and the agent image. Not part of
// `pnpm test`. What each section measures: docs/performance.md; the sections: scripts/bench/.
//
//   pnpm bench [--runs N] [--only 1,2,...] [--json FILE] [--caller-env]
//              [--requests N] [--stream-mib N] [--brokers N]    (section 6)
//              [--soak N] [--soak-egress runtime|none]          (section 7)
//              [--refs N]                                       (sections 3, 9)
//              [--big-gib N]                                    (section 9, default 1)
//              [--flood-seconds N]                              (section 10, default 300)
//              [--floods distinct,identical,relay,files]        (section 10: which floods; default all)
//              [--image IMAGE]   (default localhost/agent-sandbox:latest; it must have egress-relay)
//              [--versus IMAGE]  (sections 1, 12: the same cases with another image, side by side)
//              [--agents IMAGE]  (section 1: Claude Code's `--version` through the launcher and hand-written, in that image)
//              [--quiet-seconds N] [--quiet-files N,...]        (section 13, default 60; 10, 100000 and 1000000 always)
//              [--quiet-pairs N]  (section 13: windows per size, each a session and a hand-written run side by side; default 1, the median is the row's)
//
// 1 session overhead: `agent-sandbox run -- true` vs a bare `podman run --rm` of the same argv
// 2 each executable's cold start vs `node -e 0`
// 3 git work: plan and run for a linked worktree with few refs and with many
// 4 16 sessions at once: all succeed, attributed, ledger lines, nothing left, launcher peak RSS
// 5 cost as work grows: 1/10/100 worktrees + staged credentials; 10 vs 100 000 workspace files
// 6 the egress broker: latency (p50, p99) and throughput vs direct, 16 brokers at once
// 7 the soak: 64 sessions at once with every kind of ending; reasons, leftovers, host latency
// 8 the disk ceiling's overshoot: a writer with no end under --disk 256m, idle and loaded
// 9 the session's git store: prepare and import for this project's history and a 1 GiB repository; per-ref costs
// 10 floods: the broker (distinct names, one denied name, distinct names through the relay) and empty files; RSS, log, overshoot
// 11 where one run of /bin/true spends its time, step by step (the launcher's marks, podman's events)
// 12 the container side before the agent: entrypoint, cred-stage install, relay (wall, container CPU)
// 13 a quiet session's supervision: the launcher's CPU per minute over a window in the middle of its agent's sleep
import { existsSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { bin, image, loadavg, options, repo, runTeardowns } from './bench/common.mjs';

const sections = {
  1: async () => (await import('./bench/session-overhead.mjs')).sessionOverhead(),
  2: async () => (await import('./bench/tool-start.mjs')).toolStart(),
  3: async () => (await import('./bench/git-work.mjs')).gitWork(),
  4: async () => (await import('./bench/concurrent.mjs')).concurrent(),
  5: async () => (await import('./bench/growth.mjs')).growth(),
  6: async () => (await import('./bench/egress.mjs')).egress(),
  7: async () => (await import('./bench/soak.mjs')).soak(),
  8: async () => (await import('./bench/disk-ceiling.mjs')).diskCeiling(),
  9: async () => (await import('./bench/git-store.mjs')).gitStore(),
  10: async () => (await import('./bench/floods.mjs')).floods(),
  11: async () => (await import('./bench/run-profile.mjs')).runProfile(),
  12: async () => (await import('./bench/container-side.mjs')).containerSide(),
  13: async () => (await import('./bench/quiet.mjs')).quiet(),
};
const tools = [
  'path-guard',
  'cred-stage',
  'mount-plan',
  'nnp-probe',
  'sandbox-run',
  'podman-attrib',
  'agent-unsafe',
  'agent-sandbox',
  'egress-proxy',
];

/** The bins run their bundle only while it is fresh (lib/shared/src/bin-entry.cts): make them so, as `pnpm build` does last; say which entry each runs. */
async function entries() {
  spawnSync(process.execPath, [path.join(repo, 'scripts', 'bundle-bins.mjs')], { stdio: 'ignore' });
  const entryModule = path.join(repo, 'lib', 'shared', 'dist', 'bin-entry.cjs');
  const { binEntry } = existsSync(entryModule) ? await import(entryModule) : { binEntry: () => ({ kind: 'unbundled' }) };
  return Object.fromEntries(tools.map((t) => [t, binEntry(bin(t), t).kind]));
}

/** The sessions' image must have the relay the launcher puts in front of the agent (an image built from an older tree has none). */
function checkImage(name) {
  const r = spawnSync(
    'podman',
    [
      '--runtime',
      'runc',
      'run',
      '--rm',
      '--network=none',
      '--ulimit',
      'nofile=4096:4096',
      '--ulimit',
      'nproc=4096:4096',
      '--entrypoint',
      '/bin/sh',
      name,
      '-c',
      'command -v egress-relay && command -v node',
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0)
    throw new Error(
      `the image ${name} has no egress-relay or no node (${(r.stderr || r.stdout).trim().split('\n').pop()}): rebuild it with \`pnpm images\`, or give another with --image`,
    );
}

async function main() {
  const chosen = Object.keys(sections).filter((k) => !options.only || options.only.has(k));
  const unknown = [...(options.only ?? [])].filter((k) => !sections[k]);
  if (unknown.length) throw new Error(`--only: no section ${unknown.join(', ')} (there are ${Object.keys(sections).join(', ')})`);
  if (chosen.some((k) => k !== '6')) checkImage(image);
  if (options.versus && (chosen.includes('1') || chosen.includes('12'))) checkImage(options.versus);
  if (options.agents && chosen.includes('1')) checkImage(options.agents);
  const results = { runs: options.runs, loadavg: { start: loadavg() }, entries: await entries(), sections: {}, failed: {} };
  const environment = options.callerEnv
    ? `caller's environment${process.env.NODE_EXTRA_CA_CERTS ? ' (NODE_EXTRA_CA_CERTS set)' : ''}`
    : 'environment PATH, LANG, HOME only';
  const cpus = spawnSync('nproc').stdout.toString().trim();
  console.log(
    `agent-sandbox bench: sections ${chosen.join(',')}; image ${image}; ${options.runs} runs per case, medians; load average at start ${results.loadavg.start}; ${process.version}, ${cpus} CPUs; ${environment}`,
  );
  console.log(
    `entries: ${Object.entries(results.entries)
      .map(([t, e]) => `${t} ${e}`)
      .join(', ')}`,
  );
  for (const k of chosen) {
    try {
      results.sections[k] = await sections[k]();
    } catch (err) {
      results.failed[k] = err.message;
      console.log(`\n${k}. FAILED: ${err.stack ?? err.message}`);
    }
    console.log(`   (load average ${(results.loadavg[k] = loadavg())})`);
  }
  results.loadavg.end = loadavg();
  console.log(`\nload average at end ${results.loadavg.end}`);
  if (options.json) writeFileSync(options.json, `${JSON.stringify(results, null, 2)}\n`);
  return Object.keys(results.failed).length === 0 ? 0 : 1;
}

for (const [signal, status] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
])
  process.once(signal, () => void runTeardowns().then(() => process.exit(status)));
let status = 1;
try {
  status = await main();
} catch (err) {
  console.error(`bench: ${err.message}`);
} finally {
  await runTeardowns();
}
process.exit(status);

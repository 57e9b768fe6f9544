// Section 11: where one `agent-sandbox run -- /bin/true` spends its time, step by step, with the
// broker (the default) and with --egress none, runs interleaved. The launcher runs with
// profile-hook.cjs preloaded (spawns, file-system calls that mark its steps, the bundle's load)
// and the container's steps come from podman's events (create, start, died). Each step is the
// time from one mark to the next. A mark a run does not reach (the broker's, with --egress none)
// ends its step at the next mark found, and the step that mark ends is 0: with --egress none,
// "compose ..." ends where the broker would have started. Medians over the runs, in ms.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { bin, median, options, tag, timed } from './common.mjs';
import { base, env, flags, makeRoot, plainWorkspace } from './fixture.mjs';

const hook = path.join(path.dirname(fileURLToPath(import.meta.url)), 'profile-hook.cjs');

/** The marks, in the order a run reaches them: [the step that ends there, how to find it]. */
const marks = (id) => [
  ["exec of env and node, to node's first instant", (e) => e.what === 'node-start'],
  ["node's own start (what node -e 0 costs)", (e) => e.what === 'preload'],
  ['the bin shim and the bundle load (compile)', (e) => e.what.startsWith('bundle-load'), (e) => e.t + Number(e.what.split(' ')[1])],
  ['the CLI: argv, the request and its validation', (e) => e.what === 'readdirSync /sys/fs/cgroup'],
  ['the sweep (cgroup parents, /tmp, every session lock)', (e) => e.what === 'readFileSync /etc/machine-id'],
  ['host pick, NoNewPrivs probe, preflight (seccomp, image)', (e) => /^openSync .*\.lock$/.test(e.what)],
  ['the lock (flock)', (e) => e.what.startsWith('sync flock'), (e) => e.t + Number(e.what.split('| ')[1])],
  ["the record, the sentinel's start", (e) => e.what.startsWith('spawn /bin/sh -c IFS= read')],
  ['compose, credential staging, home, git store', (e) => e.what === `mkdirSync /run/agent-sandbox/egress/${id}`],
  ["the broker's start", (e) => new RegExp(`^mkdirSync /sys/fs/cgroup/.*agent-sandbox/${id}$`).test(e.what)],
  ['parent cgroup, record', (e) => e.what.startsWith('spawn du ')],
  ['first du walk started, sampler, to the podman spawn', (e) => / run --rm/.test(e.what) && e.what.startsWith('spawn ')],
  ["podman's client start, to create", (e) => e.what === 'podman create'],
  ['podman, conmon, runc: create to start', (e) => e.what === 'podman start'],
  ['in the container: entrypoint, cred-stage, relay, /bin/true', (e) => e.what === 'podman died'],
  ["podman run's own --rm removal, to its exit", (e) => / run --rm/.test(e.what) && e.what.startsWith('exit ')],
  ['the last du walk, attribution', (e) => e.what === 'openSync /run/libpod/events/events.log'],
  ["untilParentEmpty's wait (conmon, podman's clean-up)", (e) => /^rmdirSync \/sys\/fs\/cgroup\//.test(e.what)],
  ['release: cgroups, credentials, git, broker', (e) => /^appendFileSync .*\.jsonl$/.test(e.what)],
  ['the ledger line, retention', (e) => e.what.startsWith('exit-code')],
  ["node's exit, to the caller's wait", (e) => e.what === 'reaped'],
];

/** One run's events: the launcher's (its hook line), podman's for its container, its spawn and reaping. */
function runEvents(run, hookLine, podmanEvents) {
  const own = podmanEvents
    .filter((e) => e.at >= run.startedAt && e.at <= run.endedAt)
    .map((e) => ({ t: e.at, what: `podman ${e.status}` }));
  const all = [{ t: run.startedAt, what: 'spawned' }, ...hookLine.events, ...own, { t: run.endedAt, what: 'reaped' }];
  return all.sort((a, b) => a.t - b.t);
}

/** The steps of one run: each mark found after the previous one, the time from mark to mark. */
function steps(events, id) {
  const out = {};
  let last = events[0].t;
  let from = 0;
  let missing;
  for (const [name, match, at = (e) => e.t] of marks(id)) {
    const i = events.findIndex((e, k) => k >= from && match(e));
    if (i < 0) {
      missing ??= name;
      continue;
    }
    const t = at(events[i]);
    out[missing ?? name] = t - last;
    if (missing) out[name] = 0;
    missing = undefined;
    last = t;
    from = i;
  }
  return out;
}

function podmanEventsSince(sinceMs, name) {
  const r = spawnSync(
    'podman',
    [
      'events',
      '--stream=false',
      '--since',
      new Date(sinceMs - 1000).toISOString(),
      '--filter',
      `container=${name}`,
      '--format',
      '{{json .}}',
    ],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  return (r.stdout ?? '')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .map((e) => ({ status: e.Status, at: Date.parse(e.Time) }));
}

/** The launcher's own CPU (node, from its hook) and its whole tree's (with podman's client, du, flock: what the bench waited for). */
function cpuOf(r, line) {
  const own = line.events.find((e) => e.what.startsWith('own-cpu '));
  return {
    'CPU: the launcher (node) alone': own ? Number(own.what.split(' ')[1]) : undefined,
    'CPU: with its children (podman client, du, find, flock)': r.cpu,
  };
}

function report(table, runs) {
  const names = marks('')
    .map(([name]) => name)
    .filter((n) => table.broker[n] || table.none[n]);
  const cell = (xs) => (xs?.length ? `${median(xs).toFixed(0).padStart(6)}` : '     —');
  console.log(
    `\n11. where one run of /bin/true spends its time (medians of ${runs} interleaved runs, ms; each step ends at the next mark)`,
  );
  console.log(`   ${'step'.padEnd(60)} broker  none`);
  for (const n of names) console.log(`   ${n.padEnd(60)} ${cell(table.broker[n])} ${cell(table.none[n])}`);
  for (const n of ['total', ...Object.keys(cpuOf({}, { events: [] }))])
    console.log(`   ${n.padEnd(60)} ${cell(table.broker[n])} ${cell(table.none[n])}`);
}

export async function runProfile() {
  const root = makeRoot('s11');
  const id = `${tag}-p`;
  plainWorkspace(root, id);
  const out = path.join(base, 'profile-hook.jsonl');
  const hookEnv = { ...env, NODE_OPTIONS: `--require ${hook}`, PROFILE_HOOK_OUT: out };
  const cases = { broker: [], none: ['--egress', 'none'] };
  const table = { broker: {}, none: {} };
  const since = Date.now();
  const runs = [];
  for (let i = 0; i < options.runs; i += 1) {
    for (const [mode, extra] of Object.entries(cases)) {
      rmSync(out, { force: true });
      const r = timed(bin('agent-sandbox'), ['run', ...flags(root, id), ...extra, '--agent-bin', '/bin/true', '--'], { env: hookEnv });
      const line = readFileSync(out, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .find((l) => l.argv[1] === 'run');
      runs.push({ mode, r, line });
    }
  }
  const events = podmanEventsSince(since, `agent-sandbox-${id}`);
  for (const { mode, r, line } of runs) {
    const figures = { ...steps(runEvents(r, line, events), id), total: r.wall, ...cpuOf(r, line) };
    for (const [name, ms] of Object.entries(figures)) if (ms !== undefined) (table[mode][name] ??= []).push(ms);
  }
  report(table, options.runs);
  // profile-hook.cjs says how the bundle was loaded: from the launcher's V8 code cache or compiled.
  const cached = runs.filter(({ line }) => line.events.some((e) => /^bundle-load \S+ cached$/.test(e.what))).length;
  console.log(`   the bundle loaded from its code cache in ${cached} of ${runs.length} runs`);
  return Object.fromEntries(
    Object.entries(table).map(([mode, t]) => [mode, Object.fromEntries(Object.entries(t).map(([k, xs]) => [k, median(xs)]))]),
  );
}

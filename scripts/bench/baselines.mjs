// The baselines a session is measured against (sections 1 and 12), and what section 1 reads
// from podman's events. The hand-written run is a `podman run --rm` with a session's security
// flags, limits and mounts (from `agent-sandbox plan --egress none`), its own home, the user's
// credential file mounted directly where the agent reads it (no staging, no cred-stage
// install), no relay, and the command as the entrypoint (`--entrypoint /bin/true`): what a
// careful person would type. The bare run is the launcher's own argv run by hand: the image's
// entrypoint, cred-stage install, and the relay in front of the command when the plan has one.
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { median, tag } from './common.mjs';
import { base, home, launcher } from './fixture.mjs';

/** A staged credential as the launcher stages one (owned by the container's uid, 0400), for the bare runs. */
export function stagedCopy() {
  const staged = path.join(base, 'bare-secret', 'auth.json');
  mkdirSync(path.dirname(staged), { recursive: true, mode: 0o700 });
  writeFileSync(staged, readFileSync(path.join(home, '.codex', 'auth.json')), { mode: 0o400 });
  chownSync(path.dirname(staged), 1000, 1000);
  chownSync(staged, 1000, 1000);
  return staged;
}

/**
 * The plan's argv as a bare run: its own container name, the staged copy in place of the
 * session's (plan stages nothing), an empty directory in place of the broker's socket directory.
 */
export function bareArgv(root, id, extra, name, staged) {
  const plan = JSON.parse(launcher('plan', root, id, extra)().stdout);
  const socketDir = path.join(base, 'bare-egress');
  mkdirSync(socketDir, { recursive: true, mode: 0o711 });
  const argv = plan.argv.map((a) =>
    a
      .replace(`source=${path.join(root, 'secrets', id, 'codex', 'auth.json')},`, `source=${staged},`)
      .replace(/source=\/run\/agent-sandbox\/egress\/[^,]+,/, `source=${socketDir},`),
  );
  argv[argv.indexOf('--name') + 1] = `agent-sandbox-${tag}-${name}`;
  return argv;
}

const mountField = (arg, field) => new RegExp(`[=,]${field}=([^,]+)`).exec(arg)?.[1];

/**
 * The hand-written argv for one session's plan: `--entrypoint CMD` and its arguments after the
 * image, the session home swapped for one of its own (the launcher's stays the launcher's), each
 * staged credential mount replaced by the user's file at the path the agent reads.
 */
export function handWrittenArgv(root, id, name, [command, ...args]) {
  const plan = JSON.parse(launcher('plan', root, id, ['--egress', 'none'])().stdout);
  const ownHome = path.join(base, `hand-home-${name}`);
  mkdirSync(ownHome, { recursive: true });
  chownSync(ownHome, 1000, 1000);
  const installTo = new Map(plan.credentials.install.map((i) => [i.from, i.to]));
  const dash = plan.argv.indexOf('--');
  const flags = plan.argv.slice(0, dash).map((a) => {
    if (!a.startsWith('--mount=')) return a;
    const destination = mountField(a, 'destination');
    if (destination === '/sandbox/home') return a.replace(/source=[^,]+/, `source=${ownHome}`);
    const to = installTo.get(destination);
    return to ? `--mount=type=bind,source=${plan.credentials.identity.path},destination=${to},ro=true` : a;
  });
  flags[flags.indexOf('--name') + 1] = `agent-sandbox-${tag}-${name}`;
  return [...flags, `--entrypoint=${command}`, '--', plan.argv[dash + 1], ...args];
}

/** Every `died` event since `sinceMs` (epoch ms) of a container whose name holds `needle`: [{name, at}]. */
export function diedEvents(sinceMs, needle) {
  const r = spawnSync(
    'podman',
    ['events', '--stream=false', '--since', new Date(sinceMs - 1000).toISOString(), '--filter', 'event=died', '--format', 'json'],
    {
      encoding: 'utf8',
      maxBuffer: 256 << 20,
      timeout: 120_000,
    },
  );
  const out = [];
  for (const line of (r.stdout ?? '').split('\n')) {
    if (!line.includes(needle)) continue;
    try {
      const event = JSON.parse(line);
      out.push({ name: event.Name, at: Date.parse(event.Time) });
    } catch {
      // a partial line
    }
  }
  return out;
}

/**
 * The time from the container's end (podman's `died` event of the container named `name`) to
 * the exit of the command that ran it, for each run of a case (compare's `runs`): median, max,
 * and how many runs had their event.
 */
export function endToExit(runs, name, events) {
  const xs = [];
  for (const run of runs) {
    const died = events.find((e) => e.name === name && e.at >= run.startedAt - 50 && e.at <= run.endedAt);
    if (died) xs.push(run.endedAt - died.at);
  }
  return xs.length ? { n: xs.length, median: median(xs), max: Math.max(...xs) } : { n: 0 };
}

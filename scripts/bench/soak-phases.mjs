// Where a soak session's time went, from podman's own event log (create, start, died, remove
// of each container) between the launcher's spawn and its exit:
//   launcher, to create: node's start, the sweep, preflight, lock, staging, broker, podman's client
//   create to start:     podman, conmon and runc making the container
//   in the container:    the entrypoint (credential install), the relay, the agent's command
//   died to exit:        podman's cleanup and removal (--rm), attribution, release, the ledger line
import { spawnSync } from 'node:child_process';
import { median } from './common.mjs';

/** Each container's first time per event (epoch ms), for names containing `needle`. */
export function containerEvents(sinceMs, needle) {
  const r = spawnSync('podman', ['events', '--stream=false', '--since', new Date(sinceMs - 1000).toISOString(), '--format', 'json'], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    timeout: 120_000,
  });
  const byName = new Map();
  for (const line of (r.stdout ?? '').split('\n')) {
    if (!line.includes(needle)) continue;
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    const at = byName.get(event.Name) ?? {};
    at[event.Status] ??= Date.parse(event.Time);
    byName.set(event.Name, at);
  }
  return byName;
}

const spans = {
  'launcher, to create': (s, e) => e.create - s.spawnedAt,
  'create to start': (s, e) => e.start - e.create,
  'in the container': (s, e) => e.died - e.start,
  'died to launcher exit': (s, e) => s.exitedAt - e.died,
};

/** Median and max of each phase over the given sessions (those with every event). */
export function phases(sessions, events) {
  const out = {};
  for (const [name, span] of Object.entries(spans)) {
    const xs = sessions
      .map((s) => [s.result, events.get(`agent-sandbox-${s.id}`)])
      .filter(([, e]) => e?.create && e.start && e.died)
      .map(([r, e]) => span(r, e));
    if (xs.length) out[name] = { n: xs.length, median: median(xs), max: Math.max(...xs) };
  }
  return out;
}

/** The ledger's CPU seconds of the container (peak.cpuSeconds), median per kind. */
export function cpuByKind(sessions, ledger) {
  const byId = new Map(ledger.map((l) => [l.sessionId, l]));
  const out = {};
  for (const kind of new Set(sessions.map((s) => s.kind))) {
    const xs = sessions
      .filter((s) => s.kind === kind)
      .map((s) => byId.get(s.id)?.peak?.cpuSeconds)
      .filter((x) => typeof x === 'number');
    if (xs.length) out[kind] = median(xs);
  }
  return out;
}

// What the soak checks once every launcher has exited: the ledger (one line per session, each
// with the reason its kind must end with) and what is left on the host (containers, staged
// credentials, installed copies in the homes, session locks and records, parent cgroups, broker
// socket directories, sentinels and any other process naming the soak's root).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { containersLeft } from './concurrent.mjs';
import { ledgerLines } from './fixture.mjs';

const entries = (dir) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

/** Every cgroup hierarchy mounted under /sys/fs/cgroup (v1 controllers, the unified one, or v2 itself). */
function hierarchies() {
  const top = '/sys/fs/cgroup';
  const mounted = entries(top)
    .map((n) => path.join(top, n))
    .filter((d) => existsSync(path.join(d, 'cgroup.procs')));
  return [top, ...mounted];
}

/** Processes whose command line names `needle`, other than this one and its probe. */
function processesNaming(needle) {
  const found = [];
  for (const pid of entries('/proc').filter((n) => /^\d+$/.test(n))) {
    if (Number(pid) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      if (cmd.includes(needle)) found.push({ pid: Number(pid), cmd: cmd.slice(0, 200) });
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/** What the sessions left: counts per kind of thing, and the names, for the report. */
export function leftovers(root, ids, containerPrefix) {
  const cgroups = hierarchies().flatMap((h) =>
    ids.filter((id) => existsSync(path.join(h, 'agent-sandbox', id))).map((id) => path.join(h, 'agent-sandbox', id)),
  );
  const naming = processesNaming(root);
  const left = {
    containers: containersLeft(containerPrefix),
    secrets: entries(path.join(root, 'secrets')),
    sessions: entries(path.join(root, 'sessions')),
    installed: ids.filter((id) => existsSync(path.join(root, 'homes', id, '.codex', 'auth.json'))),
    cgroups,
    egressDirs: ids.filter((id) => existsSync(path.join('/run/agent-sandbox/egress', id))),
    sentinels: naming.filter((p) => p.cmd.includes('sentinel-main')),
    processes: naming.filter((p) => !p.cmd.includes('sentinel-main')),
  };
  const count = Object.fromEntries(Object.entries(left).map(([k, v]) => [k, typeof v === 'number' ? v : v.length]));
  return { count, total: Object.values(count).reduce((a, b) => a + b, 0), left };
}

/** Each session's ledger lines against its kind's expected reason (and exit status, where fixed). */
export function checkLedger(file, sessions) {
  const lines = ledgerLines(file);
  const byId = new Map();
  for (const line of lines) byId.set(line.sessionId, [...(byId.get(line.sessionId) ?? []), line]);
  const expected = {};
  const got = {};
  const wrong = [];
  for (const s of sessions) {
    expected[s.expect] = (expected[s.expect] ?? 0) + 1;
    const mine = byId.get(s.id) ?? [];
    const line = mine[0];
    const reason = line ? (line.outcome === 'ran' ? line.reason : `${line.outcome}:${line.error?.code ?? line.reason ?? '?'}`) : 'no line';
    got[reason] = (got[reason] ?? 0) + 1;
    const exitOk = s.exit === undefined || line?.exitCode === s.exit;
    if (mine.length !== 1 || reason !== s.expect || !exitOk || line.egress?.mode !== s.egress) {
      wrong.push({
        id: s.id,
        kind: s.kind,
        lines: mine.length,
        reason,
        exitCode: line?.exitCode,
        launcherExit: s.result?.code,
        egress: line?.egress?.mode,
        message: line?.message ?? s.result?.stderr.trim().split('\n').pop(),
      });
    }
  }
  const known = new Set(sessions.map((s) => s.id));
  const strangers = lines.filter((l) => !known.has(l.sessionId)).length;
  const oneEach = sessions.every((s) => (byId.get(s.id) ?? []).length === 1);
  return { lines: lines.length, oneEach, strangers, expected, got, wrong, ledger: lines };
}

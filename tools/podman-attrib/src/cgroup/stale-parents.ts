/**
 * Parents left by a session whose owner died without cleaning up (a launcher killed with
 * SIGKILL: its container runs on under conmon until it exits, `--rm` then removes the
 * container, and `/agent-sandbox/<id>` stays). Each prepare records its owner (pid and the
 * process's start time, so a reused pid does not count) in a fixed directory before it makes
 * the parent; each cleanup sweeps the parents whose owner is gone.
 *
 * A parent is removed only when, all at once: its owner record names a process that no longer
 * exists (or there is no record and the parent is older than `noRecordGraceMs`: a prepare
 * writes the record before the mkdir, so a record-less parent that young may be one being
 * made); and rmdir succeeds, which the kernel allows only for a cgroup with no tasks and no
 * children. A stale parent whose container still runs is therefore left until a later sweep.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cgroupMode } from '@agent-sandbox/shared';
import { cgroupLayout, cgroupRoot, hierarchyRoots, parentBase, populated, removeSessionParent } from './cgroup-tree.js';
import { currentHost, sessionIdOfSlice, sessionParent, sliceBasePath, type ParentHost, type SessionParent } from './session-parent.js';

/** Where owner records live: root's sessions under /run; others under their runtime directory. */
export function ownerDir(uid = process.getuid?.() ?? 0, env: NodeJS.ProcessEnv = process.env): string {
  if (uid === 0) return '/run/agent-sandbox/owners';
  return path.join(env['XDG_RUNTIME_DIR'] || `/run/user/${uid}`, 'agent-sandbox', 'owners');
}

interface OwnerRecord {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: the start time in clock ticks since boot. */
  start: string;
}

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ..." where comm may hold spaces and parentheses: split after the last ")".
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Records this process as the owner of `sessionId`'s parent (call before making the parent). */
export function recordOwner(sessionId: string, dir = ownerDir()): string {
  const file = path.join(dir, sessionId);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const record: OwnerRecord = { pid: process.pid, start: startTimeOf(process.pid) ?? '' };
  writeFileSync(file, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  return file;
}

function ownerAlive(file: string): boolean | undefined {
  let record: OwnerRecord;
  try {
    record = JSON.parse(readFileSync(file, 'utf8')) as OwnerRecord;
  } catch (err) {
    // no record (or an unreadable one): unknown
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : true;
  }
  return startTimeOf(record.pid) === record.start;
}

export interface SweepOptions {
  /** The session being cleaned up by the caller (never swept here). */
  except?: string;
  /** Consider only these session ids (default: every parent under the base). */
  ids?: string[];
  dir?: string;
  root?: string;
  /** A parent with no owner record is left alone until it is this old (default 60 s). */
  noRecordGraceMs?: number;
  now?: number;
  /** Which form the parents take here (default: this host's manager and our uid). */
  host?: ParentHost;
}

/** Removes the parents of sessions whose owner is gone; returns the session ids removed. */
export function sweepStaleParents(options: SweepOptions = {}): string[] {
  const root = options.root ?? cgroupRoot;
  const dir = options.dir ?? ownerDir();
  const grace = options.noRecordGraceMs ?? 60_000;
  const now = options.now ?? Date.now();
  const host = options.host ?? currentHost();
  const candidates = new Map<string, number>(); // session id -> newest mtime seen
  for (const hierarchy of hierarchies(root)) {
    // cgroupfs: <hierarchy>/agent-sandbox/<id>; systemd: <hierarchy>[/user@uid]/agent_sandbox.slice/agent_sandbox-<id>.slice
    const base = path.join(hierarchy, host.manager === 'systemd' ? sliceBasePath(host.uid) : parentBase);
    let entries: string[];
    try {
      entries = readdirSync(base, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue; // no base in this hierarchy
    }
    for (const name of entries) {
      const id = host.manager === 'systemd' ? sessionIdOfSlice(name) : name;
      if (id === undefined || id === options.except || (options.ids && !options.ids.includes(id))) continue;
      try {
        const mtime = statSync(path.join(base, name)).mtimeMs;
        candidates.set(id, Math.max(candidates.get(id) ?? 0, mtime));
      } catch {
        // gone meanwhile
      }
    }
  }
  const removed: string[] = [];
  for (const [id, mtime] of candidates) {
    const alive = ownerAlive(path.join(dir, id));
    if (alive === true) continue;
    if (alive === undefined && now - mtime < grace) continue;
    let parent: SessionParent;
    try {
      parent = sessionParent(id, host);
    } catch {
      continue; // not a name we make: not ours
    }
    const layout = cgroupLayout(parent.relPath, undefined, root);
    // Stopping a slice stops what runs in it; a stale parent whose container still runs is left
    // for a later sweep, as rmdir leaves a cgroupfs one.
    if (parent.slice && populated(layout.dirs.pids)) continue;
    if (removeSessionParent(parent, layout, 0).length === 0) {
      rmSync(path.join(dir, id), { force: true });
      removed.push(id);
    }
  }
  return removed;
}

/** v2: the one hierarchy; v1: every mounted hierarchy directory. */
function hierarchies(root: string): string[] {
  try {
    return cgroupMode(root) === 'v2' ? [root] : hierarchyRoots(root);
  } catch {
    return [];
  }
}

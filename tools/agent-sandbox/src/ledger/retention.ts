/**
 * What the launcher keeps per session does not pile up across thousands of sessions. Per
 * session it keeps, beside the ledger (which rotates itself, rotate.ts):
 *
 * - `<state>/egress/<id>-<runId>.jsonl`: the broker's attempt log (8 MiB at most each);
 * - `<state>/logs/<id>-<time>.log`: exec mode's log of the agent's output.
 *
 * Retention, per directory: the newest 200 files, none older than 30 days, and at most 1 GiB in
 * all (the newest first); a file written to in the last 10 minutes is never removed. It is applied at the end of every session (a readdir and a stat per
 * file: about a millisecond for a few hundred files) and by hand with `agent-sandbox prune`.
 * Everything else a session leaves is per workspace (its home, git view, outgoing bundle,
 * record) and goes with `agent-sandbox workspace rm`. Only regular files named as the launcher
 * names them are ever removed: these directories are the launcher's (0700), never mounted into a
 * session, and a link or a stranger file there is left alone.
 */
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

export interface RetentionPolicy {
  /** Files kept per directory, newest first. */
  keep: number;
  /** Files older than this (ms) go. */
  olderThanMs: number;
  /** Bytes kept per directory, newest first. */
  maxBytes: number;
}

export const defaultRetention: RetentionPolicy = { keep: 200, olderThanMs: 30 * 24 * 3600 * 1000, maxBytes: 2 ** 30 };

export interface KeptFile {
  path: string;
  mtimeMs: number;
  bytes: number;
}

/** The directories under the state directory (the ledger's) and the names the launcher gives there. */
const kinds = [
  { dir: 'egress', name: /^[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{16}\.jsonl$/ },
  { dir: 'logs', name: /^[A-Za-z0-9][A-Za-z0-9._-]*-\d{4}-\d{2}-\d{2}T[0-9-]+Z\.log$/ },
];

const activeMs = 10 * 60 * 1000;

/** Which files go under the policy: the pure decision, newest first. */
export function planRetention(files: KeptFile[], policy: RetentionPolicy, now: number): { remove: KeptFile[]; keep: KeptFile[] } {
  const newestFirst = [...files].sort((a, b) => b.mtimeMs - a.mtimeMs || a.path.localeCompare(b.path));
  const remove: KeptFile[] = [];
  const keep: KeptFile[] = [];
  let bytes = 0;
  for (const file of newestFirst) {
    // Written to in the last 10 minutes: a session may still be writing it (unlinked, its lines would be lost).
    const active = now - file.mtimeMs < activeMs;
    const fits = active || (keep.length < policy.keep && now - file.mtimeMs <= policy.olderThanMs && bytes + file.bytes <= policy.maxBytes);
    if (fits) {
      keep.push(file);
      bytes += file.bytes;
    } else remove.push(file);
  }
  return { remove, keep };
}

/** The launcher's files in one kind's directory (regular files with its names only). */
function listKind(dir: string, name: RegExp): KeptFile[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const files: KeptFile[] = [];
  for (const n of names.filter((x) => name.test(x))) {
    try {
      const info = lstatSync(path.join(dir, n));
      if (info.isFile()) files.push({ path: path.join(dir, n), mtimeMs: info.mtimeMs, bytes: info.blocks * 512 });
    } catch {
      // gone meanwhile
    }
  }
  return files;
}

export interface RetentionResult {
  removed: string[];
  kept: number;
  /** Bytes the removed files took (or would take, on a dry run). */
  bytes: number;
}

/** Applies the policy to the state directory's per-session files; `dryRun` only says what would go. */
export function applyRetention(
  stateDir: string,
  policy: RetentionPolicy = defaultRetention,
  options: { dryRun?: boolean; now?: number } = {},
): RetentionResult {
  const result: RetentionResult = { removed: [], kept: 0, bytes: 0 };
  for (const kind of kinds) {
    const { remove, keep } = planRetention(listKind(path.join(stateDir, kind.dir), kind.name), policy, options.now ?? Date.now());
    for (const file of remove) {
      if (!options.dryRun) rmSync(file.path, { force: true });
      result.removed.push(file.path);
      result.bytes += file.bytes;
    }
    result.kept += keep.length;
  }
  return result;
}

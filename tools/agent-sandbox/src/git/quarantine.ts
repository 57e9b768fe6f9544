/**
 * What the user's own tools would meet in the workspace after a session, made inert by moving it
 * out: every nested git dir, gitfile or bare repository the session made or changed (the owner's
 * `git status` at the top of the worktree enters a nested repository through a gitlink and runs
 * what its config names: core.fsmonitor, hooks, filters), and every FIFO, socket or device node
 * the session made (git blocks on a FIFO where it opens a file). "Made or changed by the session"
 * is what differs between the walk before the agent started and the walk after it ended
 * (mount-plan's nested-git scan: a gitdir's config, HEAD and hooks are in its signature).
 *
 * Each goes by rename to `<root>/quarantine/<id>/<time>/<its path>`, beside a restore script that
 * puts each back, and the session's end line and ledger say what moved. Call only once the
 * container is gone: then nothing of the session runs, and what lstat saw is what is moved.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { walkBeneath } from '@agent-sandbox/shared/beneath';
import { boundedList } from '@agent-sandbox/shared/bounded-list';
import { fsPath } from '@agent-sandbox/shared/byte-names';
import type { NestedGitChange } from '@agent-sandbox/shared/schemas/mount-plan';

export type QuarantineKind = NestedGitChange['type'] | 'special';

export interface Quarantined {
  /** The directory that holds what moved, and the restore script. */
  dir: string;
  restore: string;
  named: { path: string; kind: QuarantineKind }[];
  others: number;
}

/** How many moved paths the ledger names (the rest are counted; the restore script has them all). */
const named = 50;

/** A path as a word for sh, in single quotes, with its exact bytes (a name that is not UTF-8 included). */
function shellWord(p: string): Buffer {
  const at = fsPath(p);
  const bytes = (typeof at === 'string' ? Buffer.from(at) : at).toString('latin1');
  return Buffer.from(`'${bytes.replace(/'/g, `'\\''`)}'`, 'latin1');
}

/** Moves each of `items` (relative to `workspace`) into a new directory under `quarantineRoot`; undefined when there is nothing. */
export function quarantine(
  workspace: string,
  quarantineRoot: string,
  items: { path: string; kind: QuarantineKind }[],
): Quarantined | undefined {
  if (items.length === 0) return undefined;
  const dir = path.join(quarantineRoot, new Date().toISOString().replace(/[:.]/g, '-'));
  const moved: { path: string; kind: QuarantineKind }[] = [];
  const restore = [
    Buffer.from(
      '#!/bin/sh\n# Puts back what agent-sandbox moved out of the workspace after a session. Read what it restores first.\nset -e\n',
    ),
  ];
  for (const item of items) {
    const from = path.join(workspace, item.path);
    // A parent the session turned into a link would move something outside the workspace: only what is reached without one moves.
    const walked = walkBeneath(workspace, from);
    if (!walked.stats && !walked.link) continue;
    if (walked.link && walked.link !== from) continue;
    const to = path.join(dir, item.path);
    mkdirSync(fsPath(path.dirname(to)), { recursive: true, mode: 0o700 });
    try {
      renameSync(fsPath(from), fsPath(to));
    } catch {
      continue; // gone, or on another file system: it stays, and the nested-git report still names it
    }
    moved.push(item);
    restore.push(Buffer.concat([Buffer.from('mv -n -- '), shellWord(to), Buffer.from(' '), shellWord(from), Buffer.from('\n')]));
  }
  if (moved.length === 0) return undefined;
  const script = path.join(dir, 'restore.sh');
  writeFileSync(script, Buffer.concat(restore), { mode: 0o700 });
  return { dir, restore: script, ...boundedList(moved, named) };
}

/** What the walks say the session made or changed that the user's tools must not meet. */
export function toQuarantine(
  nested: NestedGitChange[],
  specialBefore: string[],
  specialAfter: string[],
): { path: string; kind: QuarantineKind }[] {
  const had = new Set(specialBefore);
  return [
    ...nested.filter((n) => n.change !== 'removed').map((n) => ({ path: n.path, kind: n.type })),
    ...specialAfter.filter((p) => !had.has(p)).map((p) => ({ path: p, kind: 'special' as const })),
  ];
}

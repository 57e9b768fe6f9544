/**
 * Refs of the session's store: the host's refs written in as a snapshot at start, and, after the
 * session, read back from files the session could write (no git process runs on them) and
 * compared, so that every ref it made, moved or deleted outside its branch is counted.
 *
 * Reading follows no link and opens nothing but regular files (O_NOFOLLOW, O_NONBLOCK: a FIFO
 * planted as a ref cannot hang the launcher); every read is bounded, and so is the walk.
 * Values: an object id, `ref: <target>` for a symbolic ref, or `invalid: "<first bytes>"`.
 */
import { readlinkSync } from 'node:fs';
import { fsPath, nameFromBytes, readdirTyped, type NamedEntry } from '@agent-sandbox/shared/byte-names';
import { clip, readFileWithin, readPlainBounded, specialKind } from './bounded-read.js';
import { walkBeneath } from '@agent-sandbox/shared/beneath';
import { boundedList, type Bounded } from '@agent-sandbox/shared/bounded-list';
import { runGit, type GitPlace } from '@agent-sandbox/shared/git-run';
import type { RefChange } from '@agent-sandbox/shared/schemas/mount-plan';

export type { RefChange };
export { clip, readPlainBounded, readRegularBounded } from './bounded-read.js';

const oid = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

/** Per-worktree refs (git keeps them in each worktree's own gitdir, never in the common dir). */
const perWorktree = /^refs\/(bisect|worktree|rewritten)\//;

/** One loose ref file's value as git reads it (trailing whitespace stripped). */
export function parseLooseRef(text: string): string {
  const body = text.replace(/\s+$/, '');
  if (oid.test(body)) return body;
  if (body.startsWith('ref:')) return `ref: ${body.slice(4).trim()}`;
  return `invalid: ${JSON.stringify(body.slice(0, 40))}`;
}

/** What `HEAD` names, when it names a branch (the name without loss, as readdir gives it: shared/byte-names). */
export function branchOf(head: Buffer | undefined): string | null {
  const m = /^ref: (refs\/heads\/[^\0-\x20\x7f~^:?*[\\]+)\n?$/.exec(head ? nameFromBytes(head) : '');
  return m ? m[1]! : null;
}

/**
 * `packed-refs` lines: `<oid> <name>`; `#` header and `^<oid>` peeled lines carry no ref. Read
 * from a file, the names are decoded as readdir's are (shared/byte-names), never byte by byte as
 * Latin-1: a ref `mаin` (a Cyrillic а) would otherwise be reported as `mÐ°in`, and as moved when
 * it was not.
 */
export function parsePackedRefs(data: string | Buffer, into: Map<string, string>): void {
  const text = typeof data === 'string' ? data : nameFromBytes(data);
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
    const space = line.indexOf(' ');
    if (space > 0) into.set(line.slice(space + 1), line.slice(0, space));
  }
}

/**
 * The host's refs as a packed-refs file (sorted, as git sorts them): what the store starts
 * with. One `git for-each-ref`; symbolic refs are written as their target's value.
 */
export function hostRefsSnapshot(place: Pick<GitPlace, 'gitDir'>): { text: string; count: number } {
  const out = runGit(
    place,
    ['for-each-ref', '--format=%(objectname) %(refname)'],
    {},
    { exit: 'gitMount', code: 'git-refs-unreadable' },
  ).stdout;
  const lines = out
    .split('\n')
    .filter((l) => l !== '' && oid.test(l.slice(0, l.indexOf(' '))) && !perWorktree.test(l.slice(l.indexOf(' ') + 1)));
  return { text: `# pack-refs with: sorted \n${lines.map((l) => `${l}\n`).join('')}`, count: lines.length };
}

/** Names read without loss (shared/byte-names): a ref named with bytes that are not UTF-8 is still read and counted. */
function listDir(dir: string): NamedEntry[] {
  try {
    return readdirTyped(dir);
  } catch {
    return [];
  }
}

export interface StoreRefs {
  refs: Map<string, string>;
  /** The walk stopped at its bound: some loose refs were not read. */
  truncated: boolean;
  /** packed-refs is there but was not read (a FIFO, a link, larger than read): the refs it held are unknown, not deleted. */
  packedUnread?: string;
}

/** packed-refs is read up to this size (about 3 million refs). */
const maxPackedBytes = 256 << 20;

/** Every ref of a store's git dir (packed, then loose overriding), per-worktree refs aside. */
export function readStoreRefs(gitDir: string, maxEntries = 2_000_000): StoreRefs {
  const refs = new Map<string, string>();
  const packed = readFileWithin(`${gitDir}/packed-refs`, maxPackedBytes);
  if (packed.kind === 'file') parsePackedRefs(packed.data, refs);
  const packedUnread =
    packed.kind === 'other'
      ? packed.what
      : packed.kind === 'larger'
        ? `a file of ${packed.size} bytes (over ${maxPackedBytes}, not read)`
        : undefined;
  let visited = 0;
  // refs/ itself must be a directory, not a link the session put there (readdir would follow it).
  const pending = walkBeneath(gitDir, `${gitDir}/refs`).stats?.isDirectory() ? ['refs'] : [];
  while (pending.length > 0) {
    const rel = pending.pop()!;
    const entries = listDir(`${gitDir}/${rel}`);
    visited += entries.length;
    if (visited > maxEntries) return { refs, truncated: true, ...(packedUnread ? { packedUnread } : {}) };
    for (const entry of entries) {
      const name = `${rel}/${entry.name}`;
      if (entry.type.isDirectory()) pending.push(name);
      else if (entry.name.endsWith('.lock') || perWorktree.test(name)) continue;
      else if (entry.type.isSymbolicLink()) {
        // A legacy symbolic ref; never followed.
        const target = nameFromBytes(readlinkSync(fsPath(`${gitDir}/${name}`), 'buffer'));
        refs.set(name, target.startsWith('refs/') ? `ref: ${target}` : `invalid: symlink to ${JSON.stringify(target.slice(0, 40))}`);
      } else if (entry.type.isFile()) {
        const data = readPlainBounded(`${gitDir}/${name}`, 4096);
        if (data) refs.set(name, parseLooseRef(nameFromBytes(data)));
      } else {
        // A FIFO, socket or device where a ref was: named as what it is, never opened.
        refs.set(name, `invalid: ${specialKind(entry.type) ?? 'not a regular file'}`);
      }
    }
  }
  return { refs, truncated: false, ...(packedUnread ? { packedUnread } : {}) };
}

/** Every ref that differs between the snapshot and the store, `except` the session's branch: 20 named (sorted), then a count. */
export function droppedRefs(
  before: Map<string, string>,
  after: Map<string, string>,
  except: string | null,
  packedUnread?: string,
): Bounded<RefChange> {
  const names: string[] = [];
  for (const [name, value] of after) if (name !== except && before.get(name) !== value) names.push(name);
  for (const name of before.keys()) if (name !== except && !after.has(name)) names.push(name);
  names.sort();
  const bounded = boundedList(names, 20);
  // A ref missing after is deleted only when packed-refs could be read: else what it names is unknown.
  const now = (name: string) => after.get(name) ?? (packedUnread ? `unknown: packed-refs is ${packedUnread}` : undefined);
  return {
    named: bounded.named.map((name) => ({ name: clip(name), old: clipOrNull(before.get(name)), new: clipOrNull(now(name)) })),
    others: bounded.others,
  };
}

function clipOrNull(value: string | undefined): string | null {
  return value === undefined ? null : clip(value);
}

/**
 * The worktree's own files after the session: HEAD and the index were copies in the store
 * (prepare-store.ts); what comes back into the real git dir (a linked worktree's own gitdir, or
 * the repository's) must not point the host at objects it lacks, at another branch, or at a path
 * outside the worktree, and must not be larger than the session's --disk.
 *
 * - HEAD never comes back: it comes home only as the session's branch (import-branch.ts), and a
 *   HEAD the session detached, moved to another branch, or made a link or a FIFO stays the
 *   host's (`kept` says what it was).
 * - The index comes back when the session changed it, the host did not (sha256 at copy-in),
 *   the session's HEAD still names its branch and that branch came home (fast-forward or
 *   unchanged), it is a regular file no larger than --disk allows (its size, st_size: a sparse
 *   file counts by its size; a larger one is not read at all), it reads as git's index format
 *   (index-file.ts: versions 2-4, its checksum right, not split), every path it lists is one git
 *   would check out (no `..`, `.git`, empty or absolute component: git's checkout writes what an
 *   index lists, and `git checkout -- .` follows such an entry out of the worktree), and every
 *   object it names is in the host's repository now (gitlinks aside).
 * - Otherwise, when the branch advanced (fast-forward), the index is rebuilt from the new tip
 *   (`git read-tree`, into a temporary file renamed over the host's; `rebuilt`): the host's index
 *   describes the old tip, and against it the session's commits would show as staged changes.
 *   When the branch did not advance, or the host changed its index meanwhile, the host's index
 *   stays as it is. `kept` says why, and the end line prints it.
 * - Everything else the session made there (an unfinished rebase, a planted config, its reflog)
 *   was private and goes with the store; names that are not git's own housekeeping are listed.
 */
import { chownSync, lstatSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { runGit } from '@agent-sandbox/shared/git-run';
import { nameFromBytes } from '@agent-sandbox/shared/byte-names';
import type { GitReturn } from '@agent-sandbox/shared/schemas/mount-plan';
import { maxCopyBytes, sha256, type StoreManifest } from '../store/prepare-store.js';
import { hashFileWithin, readFileWithin, type FileRead } from '../store/bounded-read.js';
import { branchOf, clip } from '../store/store-refs.js';
import { IndexFormatError, parseIndex, unsafeIndexPath } from './index-file.js';

export { unsafeIndexPath };

/** Names git makes at the top of a git dir that carry no state worth naming. */
const housekeeping =
  /^(gc\.pid|gc\.log|COMMIT_EDITMSG|FETCH_HEAD|ORIG_HEAD|AUTO_MERGE|rr-cache|lost-found|.*\.lock|sharedindex\.[0-9a-f]+|objects|refs|logs|packed-refs|HEAD|index)$/;

/** How many of `oids` the host's repository lacks. */
function missingObjects(gitDir: string, oids: Set<string>): number {
  if (oids.size === 0) return 0;
  const checked = runGit({ gitDir }, ['cat-file', '--batch-check=%(objectname)'], { input: `${[...oids].join('\n')}\n` }).stdout;
  return checked.split('\n').filter((l) => l.endsWith(' missing')).length;
}

/** Why the host must not take this index (it was read whole, within the limit), or undefined when it may. */
function indexFault(gitDir: string, data: Buffer, oidBytes: 20 | 32): string | undefined {
  let parsed;
  try {
    parsed = parseIndex(data, oidBytes);
  } catch (err) {
    if (err instanceof IndexFormatError) return `it is not an index as git writes one: ${err.message}`;
    throw err;
  }
  // A split index keeps its entries in a sharedindex file the session wrote: not read here.
  if (parsed.extensions.includes('link')) return 'it is a split index (its entries are in another file)';
  const oids = new Set<string>();
  for (const entry of parsed.entries) {
    if (unsafeIndexPath(entry.path))
      return `it lists ${clip(JSON.stringify(entry.path), 120)}, a path git would not check out (outside the worktree or in a git dir)`;
    if (entry.mode !== '160000') oids.add(entry.oid);
  }
  const missing = missingObjects(gitDir, oids);
  return missing > 0 ? `it names ${missing} object${missing === 1 ? '' : 's'} this repository lacks` : undefined;
}

/** Moves `tmp` over `<dir>/<name>` the way git does (a rename), owned as the old file was. */
function moveIntoPlace(dir: string, name: string, tmp: string): void {
  const owner = lstatSync(`${dir}/${name}`, { throwIfNoEntry: false }) ?? lstatSync(dir);
  if (process.geteuid?.() === 0) chownSync(tmp, owner.uid, owner.gid);
  renameSync(tmp, `${dir}/${name}`);
}

/** `<dir>/index` rebuilt from `tip`'s tree (git read-tree into a temporary index); the error's words when it could not be. */
function rebuildIndex(gitDir: string, dir: string, tip: string): string | undefined {
  const tmp = `${dir}/index.agent-sandbox-${process.pid}.tmp`;
  const read = runGit({ gitDir }, ['read-tree', tip], { env: { GIT_INDEX_FILE: tmp }, allowFail: true });
  if (read.status !== 0) {
    rmSync(tmp, { force: true });
    return read.stderr.trim().split('\n').pop() ?? `git read-tree exited ${read.status}`;
  }
  moveIntoPlace(dir, 'index', tmp);
  return undefined;
}

/** What a HEAD the session left is, in words. */
function describeHead(read: FileRead): string {
  if (read.kind === 'file') return clip(JSON.stringify(nameFromBytes(read.data).trim()), 120);
  if (read.kind === 'absent') return '(removed)';
  if (read.kind === 'larger') return `a file of ${read.size} bytes`;
  return read.what;
}

/** How the branch came home: the worktree's files follow it. */
export interface BranchHome {
  outcome: GitReturn['outcome'];
  to: string | null;
}

type WorktreeReturn = Pick<GitReturn, 'copiedBack' | 'kept' | 'rebuilt'>;

/** HEAD and index: what comes back, what is rebuilt and what the host keeps (see above). */
export function returnWorktreeFiles(m: StoreManifest, home: BranchHome): WorktreeReturn {
  const from = `${m.store.dir}/${m.store.kind === 'common' ? 'own' : 'common'}`;
  const to = m.store.ownGitDir ?? m.store.gitDir;
  const copied = new Map(m.copied.map((c) => [c.name, c.sha256]));
  const kept: string[] = [];
  const head = readFileWithin(`${from}/HEAD`, 4096);
  const headData = head.kind === 'file' ? head.data : undefined;
  const onBranch = m.branch !== null && branchOf(headData) === m.branch;
  if (!onBranch && (head.kind !== 'file' || sha256(headData) !== copied.get('HEAD'))) {
    kept.push(`HEAD: the session left it ${head.kind === 'file' ? 'at ' : ''}${describeHead(head)}; the host's stays`);
  }
  const limit = Math.min(m.copyLimitBytes ?? maxCopyBytes, maxCopyBytes);
  const index = readFileWithin(`${from}/index`, limit);
  if ((index.kind === 'absent' && !copied.get('index')) || (index.kind === 'file' && sha256(index.data) === copied.get('index')))
    return { copiedBack: [], kept };
  const cameHome = home.outcome === 'fast-forward' || home.outcome === 'unchanged';
  const hostChanged = hashFileWithin(`${to}/index`, maxCopyBytes) !== copied.get('index');
  let why: string | undefined;
  if (index.kind === 'absent') why = 'the session removed it';
  else if (index.kind === 'other') why = `it is ${index.what}`;
  else if (index.kind === 'larger') why = `it is ${index.size} bytes, more than the ${limit} the session's --disk allows`;
  else if (!onBranch) why = "the session's HEAD no longer names its branch";
  else if (!cameHome) why = "the session's branch did not come home";
  else if (hostChanged) why = 'it changed here during the session';
  else why = indexFault(m.store.gitDir, index.data, home.to?.length === 64 ? 32 : 20);
  if (!why) {
    const tmp = `${to}/index.agent-sandbox-${process.pid}.tmp`;
    writeFileSync(tmp, (index as { data: Buffer }).data, { mode: 0o644, flag: 'wx' });
    moveIntoPlace(to, 'index', tmp);
    return { copiedBack: ['index'], kept };
  }
  return { copiedBack: [], ...notTaken(m, to, home, why, kept, hostChanged) };
}

/** The index was not taken: rebuilt from the new tip when the branch advanced (and the host left its index alone), else the host's stays. */
function notTaken(
  m: StoreManifest,
  to: string,
  home: BranchHome,
  why: string,
  kept: string[],
  hostChanged: boolean,
): Omit<WorktreeReturn, 'copiedBack'> {
  if (home.outcome !== 'fast-forward' || home.to === null || hostChanged) return { kept: [...kept, `index: ${why}; the host's stays`] };
  const failed = rebuildIndex(m.store.gitDir, to, home.to);
  if (failed)
    return { kept: [...kept, `index: ${why}; rebuilding it from ${m.branch} failed (${clip(failed, 200)}), so the host's stays`] };
  return {
    kept: [...kept, `index: ${why}; rebuilt from ${m.branch} at ${home.to.slice(0, 12)} (staged changes of the session are not kept)`],
    rebuilt: ['index'],
  };
}

/** Names the session made (or links it replaced) at the top of its git dirs, beyond git's housekeeping. */
export function leftInStore(m: StoreManifest): string[] {
  const out: string[] = [];
  const scan = (dir: string, prefix: string, links: { name: string; target: string }[], mountPoints: string[]) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (housekeeping.test(name) || mountPoints.includes(name)) continue;
      const link = links.find((l) => l.name === name);
      if (link && lstatSync(`${dir}/${name}`).isSymbolicLink()) continue;
      out.push(clip(`${prefix}${name}`));
    }
  };
  scan(`${m.store.dir}/common`, '', m.store.links, m.store.mountPoints);
  if (m.store.kind === 'common') scan(`${m.store.dir}/own`, 'worktree/', m.store.ownLinks, m.store.ownMountPoints);
  return out;
}

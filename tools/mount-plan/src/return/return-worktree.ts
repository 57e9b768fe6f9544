/**
 * The worktree's own files after the session: HEAD and the index were copies in the store
 * (prepare-store.ts); what comes back into the real git dir (a linked worktree's own gitdir, or
 * the repository's) must not point the host at objects it lacks, or at another branch.
 *
 * - HEAD never comes back: it comes home only as the session's branch (import-branch.ts), and a
 *   HEAD the session detached or moved to another branch stays the host's (`kept` says so).
 * - The index comes back when the session changed it, the host did not (sha256 at copy-in),
 *   the session's HEAD still names its branch and that branch came home (fast-forward or
 *   unchanged), it looks like an index git writes (DIRC v2-4, no split index the host lacks),
 *   every path it lists is one git would check out (no `..`, `.git`, empty or absolute component:
 *   git's checkout writes what an index lists, and `git checkout -- .` follows such an entry out
 *   of the worktree), and every object it names is in the host's repository now (`git ls-files
 *   --stage` over a copy, `git cat-file --batch-check`; gitlinks aside). Otherwise the host's
 *   index stays, and the workspace's files show as changes against it.
 * - Everything else the session made there (an unfinished rebase, a planted config, its reflog)
 *   was private and goes with the store; names that are not git's own housekeeping are listed.
 */
import { chownSync, lstatSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { runGit } from '@agent-sandbox/shared/git-run';
import type { GitReturn } from '@agent-sandbox/shared/schemas/mount-plan';
import { maxCopyBytes, sha256, type StoreManifest } from '../store/prepare-store.js';
import { branchOf, clip, readPlainBounded } from '../store/store-refs.js';

/** Names git makes at the top of a git dir that carry no state worth naming. */
const housekeeping = /^(gc\.pid|gc\.log|COMMIT_EDITMSG|FETCH_HEAD|ORIG_HEAD|AUTO_MERGE|rr-cache|lost-found|.*\.lock|sharedindex\.[0-9a-f]+|objects|refs|logs|packed-refs|HEAD|index)$/;

function looksLikeIndex(data: Buffer, newSharedIndex: boolean): boolean {
  const version = data.length >= 12 ? data.readUInt32BE(4) : 0;
  return data.subarray(0, 4).toString('latin1') === 'DIRC' && version >= 2 && version <= 4 && !newSharedIndex;
}

/**
 * A path git would not check out (its verify_path, as far as a Linux checkout goes): empty, absolute,
 * an empty, `.` or `..` component, or a `.git` component in any case. An index is only a list of
 * paths, and git's `checkout -- .` writes what it lists: such an entry would write outside the
 * worktree or into a git dir (a hook the owner's next checkout runs).
 */
export function unsafeIndexPath(p: string): boolean {
  if (p === '' || p.startsWith('/')) return true;
  return p.split('/').some((c) => c === '' || c === '.' || c === '..' || c.toLowerCase() === '.git');
}

/**
 * What the index names that the host's repository lacks (objects, gitlinks aside) and the first
 * path git would not check out; undefined when git cannot read it.
 */
function checkIndex(gitDir: string, indexCopy: string): { missing: number; unsafePath?: string } | undefined {
  const read = runGit({ gitDir }, ['ls-files', '--stage', '-z'], { env: { GIT_INDEX_FILE: indexCopy }, allowFail: true });
  if (read.status !== 0) return undefined;
  const oids = new Set<string>();
  for (const entry of read.stdout.split('\0')) {
    const m = /^([0-7]{6}) ([0-9a-f]{40,64}) \d\t([\s\S]*)$/.exec(entry);
    if (!m) continue;
    if (unsafeIndexPath(m[3]!)) return { missing: 0, unsafePath: m[3]! };
    if (m[1] !== '160000') oids.add(m[2]!);
  }
  return { missing: missingObjects(gitDir, oids) };
}

/** How many of `oids` the host's repository lacks. */
function missingObjects(gitDir: string, oids: Set<string>): number {
  if (oids.size === 0) return 0;
  const checked = runGit({ gitDir }, ['cat-file', '--batch-check=%(objectname)'], { input: `${[...oids].join('\n')}\n` }).stdout;
  return checked.split('\n').filter((l) => l.endsWith(' missing')).length;
}

/** Writes `data` as `<dir>/<name>` the way git does: a temporary file renamed into place, owned as the old one was. */
function replaceFile(dir: string, name: string, data: Buffer): void {
  const owner = lstatSync(`${dir}/${name}`, { throwIfNoEntry: false }) ?? lstatSync(dir);
  const tmp = `${dir}/${name}.agent-sandbox-${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode: 0o644, flag: 'wx' });
  if (process.geteuid?.() === 0) chownSync(tmp, owner.uid, owner.gid);
  renameSync(tmp, `${dir}/${name}`);
}

/** HEAD and index: what comes back and what the host keeps (see above). */
export function returnWorktreeFiles(m: StoreManifest, branchCameHome: boolean): Pick<GitReturn, 'copiedBack' | 'kept'> {
  const from = `${m.store.dir}/${m.store.kind === 'common' ? 'own' : 'common'}`;
  const to = m.store.ownGitDir ?? m.store.gitDir;
  const copied = new Map(m.copied.map((c) => [c.name, c.sha256]));
  const kept: string[] = [];
  const head = readPlainBounded(`${from}/HEAD`, 4096);
  const onBranch = m.branch !== null && branchOf(head) === m.branch;
  if (!onBranch && sha256(head) !== copied.get('HEAD')) {
    kept.push(`HEAD: the session left it at ${clip(JSON.stringify(head?.toString('latin1').trim() ?? '(removed)'), 120)}; the host's stays`);
  }
  const index = readPlainBounded(`${from}/index`, maxCopyBytes);
  if (!index || sha256(index) === copied.get('index')) return { copiedBack: [], kept };
  const newShared = readdirSync(from).some((n) => n.startsWith('sharedindex.') && !copied.has(n));
  let why: string | undefined;
  if (!onBranch) why = "the session's HEAD no longer names its branch";
  else if (!branchCameHome) why = "the session's branch did not come home";
  else if (sha256(readPlainBounded(`${to}/index`, maxCopyBytes)) !== copied.get('index')) why = 'it changed here during the session';
  else if (!looksLikeIndex(index, newShared)) why = 'it is not an index as git writes one';
  else {
    const check = `${m.store.dir}/index.check`;
    writeFileSync(check, index, { mode: 0o600 });
    const checked = checkIndex(m.store.gitDir, check);
    if (checked === undefined) why = 'git cannot read it';
    else if (checked.unsafePath !== undefined) why = `it lists ${clip(JSON.stringify(checked.unsafePath), 120)}, a path git would not check out (outside the worktree or in a git dir)`;
    else if (checked.missing > 0) why = `it names ${checked.missing} object${checked.missing === 1 ? '' : 's'} this repository lacks`;
  }
  if (why) return { copiedBack: [], kept: [...kept, `index: ${why}; the host's stays`] };
  replaceFile(to, 'index', index);
  return { copiedBack: ['index'], kept };
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

/**
 * The session's own git store: what the container sees at the git dir (repo, submodule) or
 * common dir (linked worktree), so that nothing the session writes reaches the host's
 * repository except, after the session, its one branch through a checked import
 * (finish-store.ts).
 *
 * Why a store of its own: with objects/, refs/ and logs/ of the real git dir shared read-write
 * (the earlier view), a session deleted every object of the host's repository (`find objects
 * -type f -delete`: packs are 0444, their directory is not), moved `main` and tags, and made
 * 100 000 refs in it. Now:
 *
 * - the real git dir is mounted read-only at `/sandbox/git/live` (live: host changes show);
 * - `<root>/git-stores/<id>/common` is mounted over the git dir's path. It holds symlinks into
 *   the live view for every name only the host may change (config, hooks, info, ...: writes
 *   fail with EROFS), real directories objects/, refs/, logs/ and a real packed-refs: git's
 *   whole writable state, private. `objects/info/alternates` names `/sandbox/git/live/objects`,
 *   so the host's objects are read in place, never copied; packed-refs starts as a snapshot of
 *   the host's refs (prepare-store.ts), so `git log main` works inside;
 * - that alternates file is pinned (pinnedMounts): without it the session's git no longer sees
 *   the host's objects, and a session that wiped its objects (`find objects -type f -delete`)
 *   could not even recover from the tip it remembered;
 * - a linked worktree's own gitdir (`<common>/worktrees/<name>`: HEAD, index, logs/HEAD) is
 *   covered the same way by `<root>/git-stores/<id>/own`, with copies of HEAD and index;
 * - `worktrees/` and `modules/` stay read-only bind mounts of the real ones (git takes the
 *   realpath of a submodule's git dir, and other worktrees' registrations must not be pruned).
 *
 * Nothing in the store is read by the host's git as a repository: the import copies only the
 * object files it recognises into a repository of the launcher's own (store-reader.ts).
 */
import type { GitStore, MountEntry } from '@agent-sandbox/shared/schemas/mount-plan';
import type { GitDetection } from '../detect/detect-git.js';

export const gitLiveMount = '/sandbox/git/live';

/** Names at the git dir's top only the host may change: symlinks into the read-only live view. */
export const liveNames: readonly string[] = [
  'config',
  'config.worktree',
  'hooks',
  'info',
  'branches',
  'remotes',
  'description',
  'shallow',
  'modules',
  'common',
  'worktrees',
];

/** Names in a linked worktree's own gitdir that tell git where the rest is or configure it. */
export const ownLiveNames: readonly string[] = ['commondir', 'gitdir', 'config.worktree', 'locked', 'info'];

/** The worktree's own state copied into the store: HEAD and the index (finish decides what comes back). */
export const worktreeCopies: readonly string[] = ['HEAD', 'index'];

export interface StoreInput {
  git: GitDetection;
  /** The workspace's host realpath. */
  workspace: string;
  root: string;
  sessionId: string;
  workdir: string;
  /**
   * The names at the real git dir's top (and the own gitdir's). Only those get a symlink: a
   * dangling one breaks tools that walk the workspace (node --test stops at `.git/common`),
   * and a name missing on the host is safe to leave to the store, which no host git reads.
   */
  present?: ReadonlySet<string>;
  ownPresent?: ReadonlySet<string>;
}

export function storeDirOf(root: string, sessionId: string): string {
  return `${root}/git-stores/${sessionId}`;
}

export interface PlannedStore {
  store?: GitStore;
  mounts: MountEntry[];
  /** Real host directories that appear at their own path inside: must pass the git-root checks. */
  samePath: string[];
}

/**
 * What ties the store to the host's objects, unchangeable inside: `objects/info/alternates` a
 * read-only bind of itself (writes fail with EROFS, unlink and rename over it with EBUSY), and
 * `objects` and `objects/info` binds of themselves, so that no rename of a parent moves the
 * file away (a mount point cannot be renamed: EBUSY). Git's own writes stay inside one mount
 * each (loose objects and packs in objects/, commit-graph and packs lists in objects/info/):
 * gc, repack, prune, commit-graph and multi-pack-index all work (test).
 */
function pinnedMounts(common: string, destination: string): MountEntry[] {
  return [
    { source: `${common}/objects`, destination: `${destination}/objects`, readOnly: false },
    { source: `${common}/objects/info`, destination: `${destination}/objects/info`, readOnly: false },
    { source: `${common}/objects/info/alternates`, destination: `${destination}/objects/info/alternates`, readOnly: true },
  ];
}

/** Read-only directories that exist are bind mounts, not symlinks (see above). */
function boundNames(git: GitDetection): string[] {
  return [...(git.hasRegistry ? ['worktrees'] : []), ...(git.hasModules ? ['modules'] : [])];
}

/** The store spec and every git mount for one session (none for kind "none"). */
export function planGitStore(input: StoreInput): PlannedStore {
  const { git, workdir } = input;
  if (git.kind === 'none' || !git.gitDir || !git.commonDir) return { mounts: [], samePath: [] };
  const full = git.kind !== 'worktree';
  const real = full ? git.gitDir : git.commonDir;
  // Where git inside finds that directory: the workspace's .git for a repo, else the same path.
  const destination = git.kind === 'repo' ? `${workdir}/.git` : real;
  const dir = storeDirOf(input.root, input.sessionId);
  const bound = boundNames(git);
  const links = liveNames
    .filter((n) => !bound.includes(n) && (input.present?.has(n) ?? true))
    .map((name) => ({ name, target: `${gitLiveMount}/${name}` }));
  if (!full) links.push({ name: 'HEAD', target: `${gitLiveMount}/HEAD` });
  const ownBound = !full && input.ownPresent?.has('modules') ? ['modules'] : [];
  const ownLinks = full
    ? []
    : ownLiveNames
        .filter((n) => input.ownPresent?.has(n) ?? true)
        .map((name) => ({ name, target: `${gitLiveMount}/worktrees/${git.worktreeName}/${name}` }));
  const store: GitStore = {
    dir,
    kind: full ? 'full' : 'common',
    gitDir: real,
    destination,
    ...(full ? {} : { ownGitDir: git.gitDir }),
    workTree: input.workspace,
    links,
    ownLinks,
    mountPoints: bound,
    ownMountPoints: ownBound,
    copies: [...worktreeCopies],
  };
  const mounts: MountEntry[] = [
    { source: real, destination: gitLiveMount, readOnly: true },
    { source: `${dir}/common`, destination, readOnly: false },
    ...pinnedMounts(`${dir}/common`, destination),
  ];
  for (const name of bound) mounts.push({ source: `${real}/${name}`, destination: `${destination}/${name}`, readOnly: true });
  const samePath = git.kind === 'repo' ? [] : [real];
  if (git.kind === 'worktree') {
    mounts.push({ source: `${dir}/own`, destination: git.gitDir, readOnly: false });
    for (const name of ownBound) mounts.push({ source: `${git.gitDir}/${name}`, destination: `${git.gitDir}/${name}`, readOnly: true });
    samePath.push(git.gitDir);
  }
  if (git.kind !== 'repo') mounts.push(...gitfileMounts(input));
  return { store, mounts, samePath };
}

/**
 * The workspace's `.git` gitfile, read-only at both views of the workspace: the agent cannot
 * replace it with a directory holding its own config. It is a direct child of a mount point,
 * so no rename of a parent inside can move the mount away.
 */
function gitfileMounts(input: StoreInput): MountEntry[] {
  const { git, workdir } = input;
  const source = `${input.workspace}/.git`;
  const out: MountEntry[] = [{ source, destination: `${workdir}/.git`, readOnly: true }];
  if (git.hostPathAlias && git.hostPathAlias !== workdir) {
    out.push({ source, destination: `${git.hostPathAlias}/.git`, readOnly: true });
  }
  return out;
}

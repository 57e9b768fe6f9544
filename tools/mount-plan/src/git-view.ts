/**
 * The git-dir view: what the container sees at the git dir (repo, submodule) or common dir
 * (linked worktree), so that nothing the session writes is read by the host's git except
 * objects, refs, reflogs and the session's own worktree state.
 *
 * Why a view and not read-only mounts of single files: a host-side rename over a file that
 * is a bind mount point in the container's mount namespace detaches that mount (Linux since
 * 3.18). `git config`, `git branch -u`, `git checkout -b --track` on the host rename `config`
 * into place; measured here: the container's read-only bind of `config` vanished and uid 1000
 * inside wrote the new file. And a name that does not exist (`commondir`, `config.worktree`)
 * cannot be covered by a mount without creating it on the host (an empty `commondir` makes
 * every host git fatal). So the whole directory is replaced inside by a session-owned shadow:
 *
 * - the real git dir is mounted read-only at `/sandbox/git/live` (live: host changes show);
 * - the shadow, mounted over the git dir's path, holds symlinks into the live view for every
 *   name only the host may change (config, hooks, info, ...: writes fail with EROFS), mount
 *   points for objects/, refs/, logs/ (bound read-write from the real git dir), and whatever
 *   git creates at the top inside (gc.pid, rr-cache, a planted commondir): private, never seen
 *   by the host, removed after the session;
 * - packed-refs is a symlink chain through `/sandbox/git/packed` (see prepare-view.ts).
 *
 * A full git dir (repo, submodule) also holds the worktree's own HEAD and index at its top:
 * those are copied into the shadow before and back after the session (finishGitView).
 */
import type { GitView, MountEntry } from '@agent-sandbox/shared/schemas/mount-plan';
import type { GitDetection } from './detect-git.js';

export const gitLiveMount = '/sandbox/git/live';
export const gitPackedMount = '/sandbox/git/packed';

/** Names only the host may change: symlinks into the read-only live view. */
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
];

/** Directories shared read-write with the host: objects, refs and reflogs only. */
export const sharedDirs: readonly string[] = ['objects', 'refs', 'logs'];

/** A full git dir's own worktree state, copied into the shadow and back. */
export const worktreeCopies: readonly string[] = ['HEAD', 'index', 'ORIG_HEAD'];

export interface ViewInput {
  git: GitDetection;
  /** The workspace's host realpath. */
  workspace: string;
  root: string;
  sessionId: string;
  workdir: string;
  /** True when `<gitDir>/worktrees` exists (mounted read-only). */
  hasRegistry: boolean;
  /** True when `<gitDir>/modules` exists (submodule git dirs, mounted read-only). */
  hasModules: boolean;
  /**
   * The names at the real git dir's top. Only those get a symlink: a dangling one breaks tools
   * that walk the workspace (node --test stops at `.git/common`), and a name missing on the host
   * is safe to leave to the shadow, which the host's git never reads.
   */
  present?: ReadonlySet<string>;
}

function viewDir(root: string, sessionId: string): string {
  return `${root}/git-views/${sessionId}`;
}

export interface PlannedView {
  view?: GitView;
  mounts: MountEntry[];
  /** Real host directories that appear at their own path inside: must pass the git-root checks. */
  samePath: string[];
}

/** The view spec and every git mount for one session (none for kind "none"). */
export function planGitView(input: ViewInput): PlannedView {
  const { git, workdir } = input;
  if (git.kind === 'none' || !git.gitDir || !git.commonDir) return { mounts: [], samePath: [] };
  const full = git.kind !== 'worktree';
  const real = full ? git.gitDir : git.commonDir;
  // Where git inside finds that directory: the workspace's .git for a repo, else the same path.
  const destination = git.kind === 'repo' ? `${workdir}/.git` : real;
  const dir = viewDir(input.root, input.sessionId);
  // Read-only directories that exist are bind mounts, not symlinks: git takes the realpath of a
  // submodule's git dir, and a relative core.worktree there must resolve below the workspace.
  const bound = [...(input.hasRegistry ? ['worktrees'] : []), ...(input.hasModules ? ['modules'] : [])];
  const links = [...liveNames, 'worktrees']
    .filter((n) => !bound.includes(n) && (input.present?.has(n) ?? true))
    .map((name) => ({ name, target: `${gitLiveMount}/${name}` }));
  links.push({ name: 'packed-refs', target: `${gitPackedMount}/l1` });
  if (!full) links.push({ name: 'HEAD', target: `${gitLiveMount}/HEAD` });
  const mountPoints = [...sharedDirs, ...bound];
  const view: GitView = {
    dir,
    shadow: `${dir}/shadow`,
    packed: `${dir}/packed`,
    gitDir: real,
    destination,
    kind: full ? 'full' : 'common',
    ...(full ? {} : { ownGitDir: git.gitDir }),
    links,
    mountPoints,
    copies: full ? [...worktreeCopies] : [],
    // packed-refs is made (empty: no refs, as git reads it) when missing, so the chain through
    // /sandbox/git/packed never dangles; it is removed afterwards if it is still empty.
    placeholders: [
      { path: `${real}/logs`, type: 'dir', removeAfter: false },
      { path: `${real}/packed-refs`, type: 'file', removeAfter: true },
    ],
  };
  const mounts: MountEntry[] = [
    { source: real, destination: gitLiveMount, readOnly: true },
    { source: view.shadow, destination, readOnly: false },
    { source: view.packed, destination: gitPackedMount, readOnly: false },
  ];
  for (const name of sharedDirs) mounts.push({ source: `${real}/${name}`, destination: `${destination}/${name}`, readOnly: false });
  for (const name of bound) mounts.push({ source: `${real}/${name}`, destination: `${destination}/${name}`, readOnly: true });
  const samePath = git.kind === 'repo' ? [] : [real];
  if (git.kind === 'worktree') {
    view.placeholders.push(...ownGitDirPlaceholders(git.gitDir));
    mounts.push(...ownGitDirMounts(git.gitDir));
    samePath.push(git.gitDir);
  }
  if (git.kind !== 'repo') mounts.push(...gitfileMounts(input));
  return { view, mounts, samePath };
}

/** Created in a linked worktree's own gitdir when missing, so a read-only mount can cover them. */
function ownGitDirPlaceholders(gitDir: string): GitView['placeholders'] {
  return [
    { path: `${gitDir}/config.worktree`, type: 'file', removeAfter: true },
    { path: `${gitDir}/modules`, type: 'dir', removeAfter: true },
  ];
}

/**
 * A linked worktree's own gitdir stays read-write (HEAD, index, logs/HEAD reach the host live),
 * except the files that tell the host's git where the rest is or add configuration: commondir,
 * gitdir, config.worktree, and modules/ (this worktree's submodule git dirs). The host never
 * rewrites these in normal use (only `git worktree repair|move` or `git config --worktree` for
 * this worktree would, and that detaches the mount: README, limitations).
 */
function ownGitDirMounts(gitDir: string): MountEntry[] {
  return [
    { source: gitDir, destination: gitDir, readOnly: false },
    ...['commondir', 'gitdir', 'config.worktree', 'modules'].map((name) => ({
      source: `${gitDir}/${name}`,
      destination: `${gitDir}/${name}`,
      readOnly: true,
    })),
  ];
}

/**
 * The workspace's `.git` gitfile, read-only at both views of the workspace: the agent cannot
 * replace it with a directory holding its own config. It is a direct child of a mount point,
 * so no rename of a parent inside can move the mount away.
 */
function gitfileMounts(input: ViewInput): MountEntry[] {
  const { git, workdir } = input;
  const source = `${input.workspace}/.git`;
  const out: MountEntry[] = [{ source, destination: `${workdir}/.git`, readOnly: true }];
  if (git.hostPathAlias && git.hostPathAlias !== workdir) {
    out.push({ source, destination: `${git.hostPathAlias}/.git`, readOnly: true });
  }
  return out;
}

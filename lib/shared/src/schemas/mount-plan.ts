/**
 * mount-plan contracts: a session (workspace, permitted root, session id, staged
 * credential mounts) in, the exact mount list out. See tools/mount-plan/README.md.
 */
import { AbsolutePath, Bounded, Closed, Mount, Type, type Static } from '../schema.js';

/** A session id: also a directory name under <root>/workspaces and <root>/homes. */
export const SessionId = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
  description: 'letters, digits, "_", ".", "-"; starts with a letter or digit; at most 64',
});

/** A staged credential: read-only, below /sandbox-secrets. */
export const CredentialMount = Closed(
  {
    source: AbsolutePath,
    destination: Type.String({ pattern: '^/sandbox-secrets/', description: 'below /sandbox-secrets/' }),
    readOnly: Type.Literal(true),
  },
  { description: 'a credential file staged read-only (from cred-stage plan)' },
);

export const MountPlanInput = Closed(
  {
    workspace: AbsolutePath,
    root: AbsolutePath,
    sessionId: SessionId,
    credentials: Type.Optional(Type.Array(CredentialMount, { maxItems: 64 })),
    gitRoots: Type.Optional(
      Type.Array(AbsolutePath, {
        minItems: 1,
        maxItems: 16,
        description: 'roots permitted for git metadata mounted at the same absolute path (default [root])',
      }),
    ),
    credentialRoots: Type.Optional(
      Type.Array(AbsolutePath, {
        minItems: 1,
        maxItems: 16,
        description: "roots permitted for credential sources (default: each source's own directory)",
      }),
    ),
    allowWorkspaceGitConfig: Type.Optional(
      Type.Boolean({
        description:
          'accept host git configuration that runs or includes a file the session can write (core.hooksPath into the ' +
          'workspace, a relative filter command, ...); listed in git.writableConfig. Default false: refused (87)',
      }),
    ),
  },
  { $id: 'mount-plan.input' },
);
export type MountPlanInput = Static<typeof MountPlanInput>;

/** A bind mount (the shared Mount schema) as a type. */
export type MountEntry = Static<typeof Mount>;

export const GitKind = Type.Union([
  Type.Literal('none'),
  Type.Literal('repo'),
  Type.Literal('worktree'),
  Type.Literal('submodule'),
]);
export type GitKind = Static<typeof GitKind>;

/** Host git configuration whose program or included file the session can write (allowed only on request). */
export const WritableConfig = Closed({
  key: Type.String(),
  value: Type.String(),
  origin: Type.String({ description: 'the config file that sets it (git config --show-origin)' }),
  path: Type.String({ description: 'the file or directory it names, as resolved for the session worktree' }),
});
export type WritableConfig = Static<typeof WritableConfig>;

export const GitInfo = Closed({
  kind: GitKind,
  gitDir: Type.Optional(Type.String({ description: 'host path of the git dir (worktree, submodule: also its container path)' })),
  commonDir: Type.Optional(Type.String({ description: 'host path of the common dir (worktree: also its container path)' })),
  worktreeName: Type.Optional(Type.String({ description: 'a linked worktree: its name under <commonDir>/worktrees' })),
  hostPathAlias: Type.Optional(
    Type.String({ description: 'host path of the workspace, also mounted there so git metadata that names it resolves' }),
  ),
  writableConfig: Type.Optional(Type.Array(WritableConfig, { description: 'accepted with allowWorkspaceGitConfig' })),
});
export type GitInfo = Static<typeof GitInfo>;

export const GitConfigEntry = Closed({ key: Type.String(), value: Type.String() });
export type GitConfigEntry = Static<typeof GitConfigEntry>;

/** A symlink the store holds: `name` in its directory pointing at `target` (a container path, into the read-only live view). */
export const StoreLink = Closed({ name: Type.String(), target: AbsolutePath });

/**
 * The session's own git store (tools/mount-plan/src/store/git-store.ts): `<root>/git-stores/<id>`,
 * whose `common/` is mounted over the git dir (repo, submodule) or common dir (linked worktree)
 * and whose `own/` over a linked worktree's own gitdir. Everything git writes inside lands there
 * (objects, refs, reflogs, packed-refs, HEAD, index); the host's objects are reached read-only
 * through git alternates, the host's refs as a snapshot written at start. Made by
 * prepareGitStore before the container starts; after it is gone, finishGitStore brings the
 * session's branch home (a checked fetch, fast-forward only) and removes the store.
 */
export const GitStore = Closed({
  dir: AbsolutePath,
  kind: Type.Union([Type.Literal('common'), Type.Literal('full')], { description: 'common: a linked worktree (common dir and own gitdir); full: a repository\'s own git dir' }),
  gitDir: AbsolutePath,
  destination: AbsolutePath,
  ownGitDir: Type.Optional(AbsolutePath),
  workTree: AbsolutePath,
  links: Type.Array(StoreLink, { description: 'symlinks in common/ into the read-only live view' }),
  ownLinks: Type.Array(StoreLink, { description: 'symlinks in own/ (a linked worktree) into the read-only live view' }),
  mountPoints: Type.Array(Type.String(), { description: 'empty directories in common/ that read-only bind mounts cover' }),
  ownMountPoints: Type.Array(Type.String(), { description: 'the same in own/ (its modules/)' }),
  copies: Type.Array(Type.String(), { description: "the worktree's own files copied in (HEAD, index): into own/ for a linked worktree, else common/" }),
});
export type GitStore = Static<typeof GitStore>;

export const MountPlanOutput = Closed(
  {
    ok: Type.Literal(true),
    mounts: Type.Array(Mount, { description: 'parents before children; every destination once' }),
    workdir: Type.String(),
    home: Type.String({ description: "host path of the session's home (created when missing)" }),
    git: GitInfo,
    gitConfig: Type.Array(GitConfigEntry, { description: 'git configuration the container must get (command scope)' }),
    gitStore: Type.Optional(GitStore),
    env: Type.Record(Type.String(), Type.String(), {
      description: 'the same configuration as GIT_CONFIG_COUNT/KEY/VALUE environment variables',
    }),
  },
  { $id: 'mount-plan.output' },
);
export type MountPlanOutput = Static<typeof MountPlanOutput>;

/** A ref the session made, moved or deleted in its store: `{name, old, new}` (null: absent). */
export const RefChange = Closed({
  name: Type.String({ description: 'refs/... (at most 256 characters shown)' }),
  old: Type.Union([Type.String(), Type.Null()], { description: 'object id, "ref: <target>", or null: created' }),
  new: Type.Union([Type.String(), Type.Null()], { description: 'object id, "ref: <target>", or null: deleted' }),
});
export type RefChange = Static<typeof RefChange>;

export const NestedGitChange = Closed({
  path: Type.String({ description: 'relative to the workspace' }),
  change: Type.Union([Type.Literal('added'), Type.Literal('changed'), Type.Literal('removed')]),
  type: Type.Union([Type.Literal('gitdir'), Type.Literal('gitfile'), Type.Literal('symlink'), Type.Literal('bare')]),
});
export type NestedGitChange = Static<typeof NestedGitChange>;


/**
 * What came home from the session's store (finishGitStore): its branch, checked and
 * fast-forwarded, or kept aside; and everything else it did to its git state, dropped and counted.
 */
export const GitReturn = Closed({
  branch: Type.Union([Type.String(), Type.Null()], { description: "the session's branch: the one checked out at start (null: a detached HEAD, nothing comes home)" }),
  outcome: Type.Union(
    [Type.Literal('fast-forward'), Type.Literal('unchanged'), Type.Literal('side-ref'), Type.Literal('none'), Type.Literal('failed')],
    { description: 'fast-forward: the branch advanced; side-ref: rewritten or moved here meanwhile (or the branch could not be advanced: storeKept), kept at refs/agent-sandbox/returned/<id>; none: no branch to bring; failed: not imported (the session broke its store; or, with storeKept, a cause on the host: retried)' },
  ),
  from: Type.Union([Type.String(), Type.Null()], { description: 'the branch here before the import' }),
  to: Type.Union([Type.String(), Type.Null()], { description: "the session's tip" }),
  sideRef: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  refsDropped: Bounded(RefChange, 20, 'every other ref the session made, moved or deleted (replace refs and notes included): not applied'),
  copiedBack: Type.Array(Type.String(), { description: "the worktree's own files brought back (index)" }),
  kept: Type.Array(Type.String(), { description: "the worktree's own files the host kept or rebuilt, each with why" }),
  rebuilt: Type.Optional(Type.Array(Type.String(), { description: "the worktree's own files rebuilt from the branch that came home instead of taken from the session (index: it listed a path git would not check out, was larger than --disk, was not a regular file or not an index as git writes one); kept says why" })),
  leftInStore: Bounded(Type.String(), 20, 'what the session made at the top of its git dirs (an unfinished rebase, a planted config): removed with the store'),
  storeKept: Type.Optional(
    Closed(
      {
        path: Type.String({ description: 'the store, kept: <root>/git-stores/<id>' }),
        why: Type.String({ description: 'what failed (a cause outside the session\'s content: a lock held here, a full disk, git killed)' }),
        attempts: Type.Integer({ minimum: 1, description: 'imports tried so far' }),
        retried: Type.Boolean({ description: 'true: the next launcher start retries the import; false: it waits for the user (agent-sandbox workspace import <id>)' }),
      },
      { description: "the import failed for a cause outside the session's content: the store and its commits are kept, not removed" },
    ),
  ),
  by: Type.Optional(Type.String({ description: 'who imported it when not the launcher itself: its sentinel, the next launcher start' })),
  prepareMs: Type.Number({ minimum: 0, description: "making the store before the session: the host's refs snapshot, links, copies of HEAD and index" }),
  ms: Type.Number({ minimum: 0, description: 'the import: fetch, checks, ref update, removal of the store' }),
});
export type GitReturn = Static<typeof GitReturn>;

/** A workspace file host tools run or read as configuration, changed by the session. */
export const HostRunChange = Closed({
  path: Type.String({ description: 'relative to the workspace (at most 256 characters shown)' }),
  change: Type.Union([Type.Literal('added'), Type.Literal('changed'), Type.Literal('removed')]),
});
export type HostRunChange = Static<typeof HostRunChange>;

export const HostRunReport = Bounded(HostRunChange, 50, 'workspace files the session changed that tools on the host run or read when the workspace is opened, entered or built');
export type HostRunReport = Static<typeof HostRunReport>;

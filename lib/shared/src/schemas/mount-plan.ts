/**
 * mount-plan contracts: a session (workspace, permitted root, session id, staged
 * credential mounts) in, the exact mount list out. See tools/mount-plan/README.md.
 */
import { AbsolutePath, Closed, Mount, Type, type Static } from '../schema.js';

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

/** A symlink the view holds: `name` in the shadow directory pointing at `target` (a container path). */
export const ViewLink = Closed({ name: Type.String(), target: AbsolutePath });

/**
 * The git-dir view: the shadow directory mounted over the git dir (or common dir) inside, whose
 * entries are symlinks into the read-only live view, mount points for objects/refs/logs, and, for a
 * full git dir, private copies of HEAD/index/ORIG_HEAD copied back after the session. Made by
 * prepareGitView before the container starts, undone by finishGitView after it is gone.
 */
export const GitView = Closed({
  dir: AbsolutePath,
  shadow: AbsolutePath,
  packed: AbsolutePath,
  gitDir: AbsolutePath,
  destination: AbsolutePath,
  kind: Type.Union([Type.Literal('common'), Type.Literal('full')]),
  ownGitDir: Type.Optional(AbsolutePath),
  links: Type.Array(ViewLink),
  mountPoints: Type.Array(Type.String(), { description: 'empty directories in the shadow that bind mounts cover' }),
  copies: Type.Array(Type.String(), { description: 'per-worktree files copied in and back (full git dirs)' }),
  placeholders: Type.Array(
    Closed({ path: AbsolutePath, type: Type.Union([Type.Literal('file'), Type.Literal('dir')]), removeAfter: Type.Boolean() }),
    { description: 'created on the host when missing, so a read-only mount can cover them' },
  ),
});
export type GitView = Static<typeof GitView>;

export const MountPlanOutput = Closed(
  {
    ok: Type.Literal(true),
    mounts: Type.Array(Mount, { description: 'parents before children; every destination once' }),
    workdir: Type.String(),
    home: Type.String({ description: "host path of the session's home (created when missing)" }),
    git: GitInfo,
    gitConfig: Type.Array(GitConfigEntry, { description: 'git configuration the container must get (command scope)' }),
    gitView: Type.Optional(GitView),
    env: Type.Record(Type.String(), Type.String(), {
      description: 'the same configuration as GIT_CONFIG_COUNT/KEY/VALUE environment variables',
    }),
  },
  { $id: 'mount-plan.output' },
);
export type MountPlanOutput = Static<typeof MountPlanOutput>;

/**
 * What the launcher reports after a session (proposed ledger fields, see tools/mount-plan/README.md,
 * "The launcher's part"): refs changed outside the session's own, nested repositories new or changed
 * in the workspace, and what finishGitView did.
 */
export const RefChange = Closed({
  name: Type.String({ description: 'refs/..., main-worktree/HEAD or worktrees/<name>/...' }),
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

export const GitViewReport = Closed({
  copiedBack: Type.Array(Type.String()),
  conflicts: Type.Array(Type.String()),
  invalid: Type.Array(Type.String()),
  dropped: Type.Array(Type.String()),
  inProgress: Type.Array(Type.String()),
});
export type GitViewReport = Static<typeof GitViewReport>;

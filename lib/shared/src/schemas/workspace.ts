/**
 * Contracts of the launcher's workspaces (tools/agent-sandbox: `workspace new|list|rm|import`) and of
 * the work a dispatched session carries to its node and back (git bundles over the forced
 * command). One schema each; types derive from them.
 */
import { AbsolutePath, Bounded, Closed, Type, type Static } from '../schema.js';
import { GitReturn } from './mount-plan.js';

const WorkspaceId = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$', description: 'the workspace id: <root>/workspaces/<id>' });
const ObjectId = Type.String({ pattern: '^[0-9a-f]{40}$', description: 'a git commit id (sha-1)' });
const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });
/** A branch as a full ref; no "..", no "@{", no control characters (checked again with git check-ref-format). */
export const BranchRef = Type.String({ pattern: '^refs/heads/[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$', description: 'the session branch as a full ref (refs/heads/...)' });

/**
 * What `workspace new` recorded (<root>/workspace-records/<id>.json, mode 0600): the repository
 * the workspace is a linked worktree of. The launcher permits exactly `commonDir` as a git root
 * for sessions in this workspace (no --git-root needed), after checking that the worktree's git
 * metadata still names it.
 */
export const WorkspaceRecord = Closed(
  {
    version: Type.Literal(1),
    id: WorkspaceId,
    origin: Type.Union([Type.Literal('local'), Type.Literal('dispatch')], { description: 'local: made by `workspace new`; dispatch: made on a node by the receiver, a worktree of its mirror' }),
    repository: AbsolutePath,
    commonDir: AbsolutePath,
    branch: BranchRef,
    base: ObjectId,
    createdAt: Type.String({ description: 'ISO 8601' }),
    /** Root mode: POSIX ACL entries granted so the agent (uid 1000) can commit; removed with the last workspace of the repository. */
    aclUids: Type.Array(Type.Integer({ minimum: 0 }), { description: 'uids granted rwX by ACL on the git metadata (root mode)' }),
  },
  { $id: 'agent-sandbox.workspace-record' },
);
export type WorkspaceRecord = Static<typeof WorkspaceRecord>;

export const WorkspaceNewOutput = Closed(
  {
    ok: Type.Literal(true),
    id: WorkspaceId,
    workspace: AbsolutePath,
    repository: AbsolutePath,
    commonDir: AbsolutePath,
    branch: BranchRef,
    base: ObjectId,
    owner: Type.Integer({ description: 'uid that owns the worktree (1000 in root mode, the user rootless)' }),
    aclUids: Type.Array(Type.Integer()),
    record: AbsolutePath,
    next: Type.String({ description: 'the command that starts a session here' }),
  },
  { $id: 'agent-sandbox.workspace-new' },
);
export type WorkspaceNewOutput = Static<typeof WorkspaceNewOutput>;

export const LastSession = Closed({
  startedAt: Type.String(),
  endedAt: Type.String(),
  outcome: Type.String(),
  reason: Type.String(),
  exitCode: Type.Integer(),
  host: Type.String(),
});

export const WorkspaceEntry = Closed({
  id: Type.String(),
  workspace: AbsolutePath,
  repository: Type.Union([AbsolutePath, Type.Null()], { description: 'null: not made by `workspace new` (no record)' }),
  branch: Type.Union([Type.String(), Type.Null()], { description: 'the checked-out branch (short name), null when detached or not git' }),
  origin: Type.Union([Type.Literal('local'), Type.Literal('dispatch'), Type.Null()]),
  busy: Type.Boolean({ description: 'a session holds its lock now' }),
  uncommitted: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'paths git status lists; null when not a git worktree, while a session runs there (the session is writing the tree), or when git status did not answer within 10 s' }),
  lastSession: Type.Union([LastSession, Type.Null()], { description: "the ledger's last line for this workspace" }),
  waiting: Bounded(Type.String(), 20, "this workspace's sessions' commits that wait to be merged: refs/agent-sandbox/returned/<id>, <id>+2, ... (git merge <ref>; git update-ref -d <ref> once they are merged or not wanted)"),
});
export type WorkspaceEntry = Static<typeof WorkspaceEntry>;

export const WorkspaceListOutput = Closed(
  {
    ok: Type.Literal(true),
    root: AbsolutePath,
    ledger: AbsolutePath,
    workspaces: Type.Array(WorkspaceEntry),
  },
  { $id: 'agent-sandbox.workspace-list' },
);
export type WorkspaceListOutput = Static<typeof WorkspaceListOutput>;

export const WorkspaceRmOutput = Closed(
  {
    ok: Type.Literal(true),
    id: WorkspaceId,
    removed: Type.Array(AbsolutePath, { description: 'what was removed: the worktree, its home, staged files, the record' }),
    branch: Type.Union([BranchRef, Type.Null()], { description: 'the branch, kept in the repository' }),
    discarded: Type.Integer({ minimum: 0, description: 'uncommitted paths discarded (--force)' }),
  },
  { $id: 'agent-sandbox.workspace-rm' },
);
export type WorkspaceRmOutput = Static<typeof WorkspaceRmOutput>;

export const WorkspaceImportOutput = Closed(
  {
    ok: Type.Literal(true),
    id: WorkspaceId,
    gitReturn: GitReturn,
  },
  { $id: 'agent-sandbox.workspace-import', description: 'the kept git store of a workspace, imported (a store that fails again stays: 87 git-store-kept)' },
);
export type WorkspaceImportOutput = Static<typeof WorkspaceImportOutput>;

/** The bundle a dispatching launcher sends after its request line: exactly `bytes` bytes on stdin. */
export const WorkOffer = Closed({
  branch: BranchRef,
  tip: ObjectId,
  bytes: Type.Integer({ minimum: 1, description: "the bundle's size; the receiver reads exactly this many bytes" }),
  sha256: Sha256,
  mirror: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$', description: "the node's mirror: <root>/mirrors/<mirror>.git" }),
});
export type WorkOffer = Static<typeof WorkOffer>;

/** One bundle that crossed: its size, checksum, tip and how long it took (milliseconds). */
export const BundleFacts = Closed({
  bytes: Type.Integer({ minimum: 0 }),
  sha256: Sha256,
  tip: ObjectId,
  base: Type.Optional(Type.Union([ObjectId, Type.Null()], { description: 'the commit the bundle builds on (null: whole history)' })),
  ms: Type.Number({ minimum: 0, description: 'time to make (sent, returned on the node), or to receive and verify (received), or to fetch back and verify (returned, client)' }),
});
export type BundleFacts = Static<typeof BundleFacts>;

/**
 * The work a dispatched session carried, in the ledger line of both sides: the branch, the
 * bundle sent, what the node received and applied, the commits that came back and what the
 * local repository did with them, and the work left uncommitted on the node.
 */
export const WorkTransfer = Closed({
  branch: BranchRef,
  sent: Type.Optional(BundleFacts),
  received: Type.Optional(BundleFacts),
  applied: Type.Optional(Closed({ worktree: Type.Union([Type.Literal('created'), Type.Literal('updated')]), ms: Type.Number({ minimum: 0 }) })),
  returned: Type.Optional(Type.Union([BundleFacts, Type.Null()], { description: 'null: no new commits' })),
  fetched: Type.Optional(
    Type.Union([Type.Literal('fast-forward'), Type.Literal('side-ref'), Type.Literal('none'), Type.Literal('failed')], {
      description: 'fast-forward: the branch and the local worktree advanced; side-ref: kept at refs/agent-sandbox/returned/<id> (the branch moved, or the worktree is dirty); none: nothing came back',
    }),
  ),
  sideRef: Type.Optional(Type.String()),
  nodeWorkspace: Type.Optional(AbsolutePath),
  uncommitted: Type.Optional(Closed({ count: Type.Integer({ minimum: 0 }), paths: Type.Array(Type.String(), { description: 'at most 50, as git status names them' }) })),
  message: Type.Optional(Type.String()),
});
export type WorkTransfer = Static<typeof WorkTransfer>;

/** The second request type of the forced command: send back the bundle a session left. */
export const ReturnRequest = Closed(
  {
    version: Type.Literal(1),
    kind: Type.Literal('return'),
    nodeMachineId: Type.String({ pattern: '^[0-9a-f]{32}$' }),
    workspaceId: WorkspaceId,
    runId: Type.String({ pattern: '^[0-9a-f]{16}$', description: "the node's run id of the session whose commits are asked for" }),
  },
  { $id: 'agent-sandbox.return-request' },
);
export type ReturnRequest = Static<typeof ReturnRequest>;

/**
 * The forced command's third request kind: what `ps --host`, `stop --host` and `shell --host` ask
 * of a node, answered from the node's own root (the running sessions' lines, the stop document,
 * or the command's own output and status).
 */
export const LiveRequest = Closed(
  {
    version: Type.Literal(1),
    kind: Type.Union([Type.Literal('ps'), Type.Literal('stop'), Type.Literal('shell')], {
      description: "ps: the node's running sessions (JSON lines); stop: end the session of workspaceId; shell: run command in it, the connection's bytes after the request its input",
    }),
    nodeMachineId: Type.String({ pattern: '^[0-9a-f]{32}$' }),
    workspaceId: Type.Optional(WorkspaceId),
    graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400, description: "stop: seconds between the agent's SIGTERM and the kill" })),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 256, description: 'shell: the command (none: a login shell, with no terminal)' })),
  },
  { $id: 'agent-sandbox.live-request' },
);
export type LiveRequest = Static<typeof LiveRequest>;

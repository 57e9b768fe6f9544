/**
 * Where a session lives on a node, fixed once per launch: the permitted root (default
 * $HOME/sandbox), the workspace pinned at <root>/workspaces/<id> (docs/design.md), the
 * session home <root>/homes/<id>, the staged credential copies <root>/secrets/<id>, the layers
 * over the host caches <root>/cache-layers/<id>, and the
 * session's lock and record <root>/sessions/<id>.{lock,json}. The session id is the workspace
 * id: one session per workspace at a time, enforced by the lock. The workspace is checked with
 * path-guard's core after realpath.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { containerNameFor } from '@agent-sandbox/shared/container-layout';
import { guardPath } from '@agent-sandbox/path-guard';

export interface SessionLayout {
  sessionId: string;
  root: string;
  workspace: string;
  home: string;
  /** Staged credential copies; never mounted whole. */
  stageDir: string;
  /** The private layers over the host caches (--cache): <root>/cache-layers/<id>/<name>/{upper,work}. */
  cacheLayerDir: string;
  /** The lock (held for the whole session) and the record a sweep reads when its owner died. */
  lockFile: string;
  recordFile: string;
  containerName: string;
}

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A workspace id: one path component of [A-Za-z0-9._-], not starting with . or -. */
export function checkWorkspaceId(id: string): string {
  if (!idPattern.test(id)) {
    throw new ToolError(
      'unsafePath',
      'bad-workspace-id',
      `workspace id ${JSON.stringify(id)} must be 1-64 characters of [A-Za-z0-9._-], not starting with . or -`,
    );
  }
  return id;
}

/**
 * This user's runtime directory on this host, where per-id names live that every root shares
 * (the broker's socket, the published ports' socket, the id's lock): /run for root,
 * /run/user/<uid> for a user with a login session, else a directory of their own under the
 * temp dir (made 0700 by whoever needs it first).
 */
export function runtimeDir(euid = process.geteuid?.() ?? 0): string {
  if (euid === 0) return '/run';
  const user = `/run/user/${euid}`;
  return existsSync(user) ? user : path.join(os.tmpdir(), `agent-sandbox-${euid}`);
}

/** The directory of session locks and records in a root. */
export function sessionsDir(root: string): string {
  return path.join(root, 'sessions');
}

/** The paths of a session with this id under an already resolved root. */
export function layoutFor(root: string, sessionId: string, workspace = path.join(root, 'workspaces', sessionId)): SessionLayout {
  return {
    sessionId,
    root,
    workspace,
    home: path.join(root, 'homes', sessionId),
    stageDir: path.join(root, 'secrets', sessionId),
    cacheLayerDir: path.join(root, 'cache-layers', sessionId),
    lockFile: path.join(sessionsDir(root), `${sessionId}.lock`),
    recordFile: path.join(sessionsDir(root), `${sessionId}.json`),
    containerName: containerNameFor(sessionId),
  };
}

/** Where what a session of this id left that the user's tools must not meet is moved (git/quarantine.ts). */
export function quarantineDirOf(root: string, sessionId: string): string {
  return path.join(root, 'quarantine', sessionId);
}

/** --root as the commands take it: an absolute path (80, relative-root), the one place this is checked. */
export function absoluteRoot(root: string): string {
  if (!path.isAbsolute(root))
    throw new ToolError('usage', 'relative-root', `--root: expected an absolute path, got ${JSON.stringify(root)}`);
  return root;
}

/** A root that must already exist (rm, import): absolute, and there (86, root-not-found, saying how a root is made). */
export function existingRoot(root: string): string {
  if (!existsSync(absoluteRoot(root))) {
    throw new ToolError(
      'unsafePath',
      'root-not-found',
      `the root ${root} does not exist; \`agent-sandbox workspace new ID --repo DIR --root ${root}\` makes it with a first workspace`,
    );
  }
  return root;
}

/** The workspace id a --workspace value names, without touching the file system. */
export function workspaceIdOf(workspace: string): string {
  return workspace.includes('/') ? path.basename(workspace) : workspace;
}

/**
 * Resolves --workspace (a path, or a bare id) to the pinned layout. Refuses (86) a workspace
 * that, after realpath, is not exactly <root>/workspaces/<id>.
 */
export async function resolveLayout(workspace: string, root: string): Promise<SessionLayout> {
  const realRoot = (await guardPath({ path: absoluteRoot(root), root, kind: 'directory' })).resolved;
  const given = workspace.includes('/') ? workspace : path.join(realRoot, 'workspaces', checkWorkspaceId(workspace));
  const guarded = await guardPath({ path: given, root: realRoot, kind: 'directory' });
  const rel = path.relative(path.join(realRoot, 'workspaces'), guarded.resolved);
  if (rel === '' || rel.startsWith('..') || rel.includes(path.sep) || path.isAbsolute(rel)) {
    throw new ToolError(
      'unsafePath',
      'workspace-not-pinned',
      `workspace ${guarded.resolved} is not directly under ${realRoot}/workspaces (the pinned mapping to /sandbox/workspaces/<id>)`,
    );
  }
  return layoutFor(realRoot, checkWorkspaceId(rel), guarded.resolved);
}

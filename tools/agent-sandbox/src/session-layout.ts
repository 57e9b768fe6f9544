/**
 * Where a session lives on a node: the permitted root (default $HOME/sandbox), the
 * workspace pinned at <root>/workspaces/<id> (shared/DESIGN.md), the session home at
 * <root>/homes/<id>. The workspace is checked with path-guard's core after realpath.
 */
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { guardPath } from '@agent-sandbox/path-guard';

export interface SessionLayout {
  root: string;
  workspace: string;
  workspaceId: string;
  home: string;
  sessionId: string;
}

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The default permitted root: $HOME/sandbox (flag --root overrides; no env var does). */
export function defaultRoot(home: string): string {
  return path.join(home, 'sandbox');
}

/**
 * The session id is the workspace id: one session per workspace at a time (the container
 * name agent-sandbox-<id> is then unique, and podman refuses a second one).
 */
export function sessionIdFor(workspaceId: string): string {
  return workspaceId;
}

/** Validates a workspace id (one path component under <root>/workspaces). */
export function checkWorkspaceId(id: string): string {
  if (!idPattern.test(id)) {
    throw new ToolError('unsafePath', 'bad-workspace-id', `workspace id ${JSON.stringify(id)} must be one path component of [A-Za-z0-9._-], not starting with . or -`);
  }
  return id;
}

/**
 * Resolves --workspace (a path, or a bare id) to the pinned layout. Refuses (86) a
 * workspace that, after realpath, is not exactly <root>/workspaces/<id>.
 */
export async function resolveLayout(workspace: string, root: string): Promise<SessionLayout> {
  if (!path.isAbsolute(root)) throw new ToolError('usage', 'relative-root', `--root: expected an absolute path, got ${JSON.stringify(root)}`);
  const guardedRoot = await guardPath({ path: root, root, kind: 'directory' });
  const realRoot = guardedRoot.resolved;
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
  const workspaceId = checkWorkspaceId(rel);
  const home = path.join(realRoot, 'homes', workspaceId);
  return { root: realRoot, workspace: guarded.resolved, workspaceId, home, sessionId: sessionIdFor(workspaceId) };
}

/**
 * The record `workspace new` (or, on a node, the receiver) writes for a workspace:
 * <root>/workspace-records/<id>.json, mode 0600 in a 0700 directory of the root, which no
 * session mounts. It names the repository the workspace is a linked worktree of; the launcher
 * permits exactly that repository's common dir as a git root for sessions in the workspace,
 * once the worktree's own git metadata is checked to still name it (the `.git` file and the
 * registration's `commondir` are in reach of the agent).
 */
import { lstatSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ToolError, parseJsonDocument, validateDocument } from '@agent-sandbox/shared';
import { containerWorkspace } from '@agent-sandbox/shared/container-layout';
import { WorkspaceRecord } from '@agent-sandbox/shared/validators/workspace';
import { detectGit } from '@agent-sandbox/mount-plan';

export type { WorkspaceRecord };

export function recordsDir(root: string): string {
  return path.join(root, 'workspace-records');
}

export function recordFileOf(root: string, id: string): string {
  return path.join(recordsDir(root), `${id}.json`);
}

/** The record of workspace `id`, or undefined when it has none. A record that does not parse is refused (80). */
export function readWorkspaceRecord(root: string, id: string): WorkspaceRecord | undefined {
  const file = recordFileOf(root, id);
  let text: string;
  try {
    if (lstatSync(file).isSymbolicLink()) throw new ToolError('unsafePath', 'workspace-record-symlink', `${file} is a symlink`);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const record = validateDocument(WorkspaceRecord, parseJsonDocument(text, file), file);
  if (record.id !== id) throw new ToolError('usage', 'bad-workspace-record', `${file} names workspace ${record.id}, not ${id}`);
  return record;
}

/** Writes the record whole (a temp file renamed over it). */
export function writeWorkspaceRecord(root: string, record: WorkspaceRecord): string {
  const dir = recordsDir(root);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (lstatSync(dir).isSymbolicLink()) throw new ToolError('unsafePath', 'workspace-record-symlink', `${dir} is a symlink`);
  const file = recordFileOf(root, record.id);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, file);
  return file;
}

export function removeWorkspaceRecord(root: string, id: string): void {
  rmSync(recordFileOf(root, id), { force: true });
}

/** Every record in the root (ones that do not parse are skipped: `list` still lists the rest). */
export function listWorkspaceRecords(root: string): WorkspaceRecord[] {
  let names: string[];
  try {
    names = readdirSync(recordsDir(root));
  } catch {
    return [];
  }
  const records: WorkspaceRecord[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    try {
      const record = readWorkspaceRecord(root, name.slice(0, -'.json'.length));
      if (record) records.push(record);
    } catch {
      // an unreadable record is not a workspace list's business
    }
  }
  return records;
}

/**
 * The git roots a session in this workspace may use besides the root: the recorded common dir,
 * after checking that the worktree's metadata (which the agent could have rewritten) still
 * names it. Refuses 87 when it does not.
 */
export async function recordedGitRoots(root: string, sessionId: string, workspace: string): Promise<string[]> {
  const record = readWorkspaceRecord(root, sessionId);
  if (!record) return [];
  const git = await detectGit({ workspace, containerWorkspace: containerWorkspace(sessionId) });
  if (git.kind !== 'worktree' || git.commonDir !== record.commonDir) {
    throw new ToolError(
      'gitMount',
      'workspace-git-moved',
      `workspace ${sessionId} was made as a worktree of ${record.commonDir}, but its git metadata now names ${git.commonDir ?? `no linked worktree (${git.kind})`}; run \`git worktree repair\` in ${record.repository}, or remove it with \`agent-sandbox workspace rm ${sessionId} --force\``,
    );
  }
  return [record.commonDir];
}

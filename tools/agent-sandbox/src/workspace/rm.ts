/**
 * `agent-sandbox workspace rm ID [--force]`: removes a workspace `workspace new` (or the
 * receiver) made: the worktree and its registration (git worktree remove), its home, its staged
 * files, its quarantine (with --force when it holds anything), what dispatch left for it, and its record. The branch stays in the repository: the
 * work is on it. Refused: uncommitted work without --force (80, naming the paths), a busy
 * workspace (92), a workspace without a record (80: it was made by hand; remove it by hand).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { removeBeneath } from '@agent-sandbox/shared/beneath';
import { guardPath } from '@agent-sandbox/path-guard';
import type { WorkspaceRmOutput } from '@agent-sandbox/shared/schemas/workspace';
import { revokeCommonDir } from '../git/grant.js';
import { runGit, uncommittedPaths } from '@agent-sandbox/shared/git-run';
import { checkWorkspaceId, existingRoot, layoutFor, quarantineDirOf } from './layout.js';
import { lockWorkspace } from './lock.js';
import { gitPlaceOf } from './list.js';
import { listWorkspaceRecords, readWorkspaceRecord, recordFileOf, removeWorkspaceRecord } from './record.js';

export interface WorkspaceRmInput {
  id: string;
  root: string;
  force: boolean;
}

/** What dispatch keeps per workspace on a node (receive-work.ts). */
export function dispatchFilesOf(root: string, id: string): string[] {
  return [
    path.join(root, 'incoming', `${id}.bundle`),
    path.join(root, 'outgoing', `${id}.bundle`),
    path.join(root, 'outgoing', `${id}.json`),
  ];
}

/** Removes a path of the workspace beneath its own directory of the root: a link (which a session may have left) is removed as a link. */
function removeOwn(target: string): boolean {
  return removeBeneath(path.dirname(target), target).removed;
}

/** Whether a workspace's quarantine still holds something a session left (not only restore scripts). */
function quarantineHolds(dir: string): boolean {
  try {
    return readdirSync(dir).some((time) => readdirSync(path.join(dir, time)).some((name) => name !== 'restore.sh'));
  } catch {
    return false;
  }
}

function refuseUncommitted(id: string, paths: string[]): never {
  const shown = paths.slice(0, 10).join(', ');
  throw new ToolError(
    'usage',
    'uncommitted-work',
    `workspace ${id} has uncommitted work (${paths.length} path${paths.length === 1 ? '' : 's'}: ${shown}${paths.length > 10 ? ', ...' : ''}); commit it, or discard it with --force`,
    { paths: paths.slice(0, 50) },
  );
}

/** The uncommitted paths; with --force, a git status that fails (a FIFO blocking it) does not stop the removal. */
function uncommittedOrForced(place: Parameters<typeof uncommittedPaths>[0], force: boolean): string[] {
  try {
    return uncommittedPaths(place);
  } catch (err) {
    if (force) return [];
    throw err;
  }
}

export async function workspaceRm(input: WorkspaceRmInput): Promise<WorkspaceRmOutput> {
  const id = checkWorkspaceId(input.id);
  const root = (await guardPath({ path: existingRoot(input.root), root: input.root, kind: 'directory' })).resolved;
  const layout = layoutFor(root, id);
  const lock = lockWorkspace(layout.lockFile, layout.recordFile, id);
  try {
    const record = readWorkspaceRecord(root, id);
    if (!record) {
      if (!existsSync(layout.workspace)) throw new ToolError('usage', 'no-such-workspace', `no workspace ${id} in ${root}`);
      throw new ToolError(
        'usage',
        'no-workspace-record',
        `workspace ${id} was not made by \`agent-sandbox workspace new\` (no ${recordFileOf(root, id)}); remove ${layout.workspace} and ${layout.home} by hand`,
      );
    }
    const quarantined = quarantineDirOf(root, id);
    if (quarantineHolds(quarantined) && !input.force) {
      throw new ToolError(
        'usage',
        'quarantine-not-empty',
        `workspace ${id}'s sessions left what was moved out of it in ${quarantined} (each with a restore.sh); look at it, or remove it with the workspace with --force`,
      );
    }
    const removed: string[] = [];
    let discarded = 0;
    if (existsSync(layout.workspace)) {
      const place = await gitPlaceOf(layout.workspace, id);
      const ours = place !== undefined && place.commonDir === record.commonDir ? place : undefined;
      if (!ours && !input.force) {
        throw new ToolError(
          'gitMount',
          'workspace-git-moved',
          `workspace ${id}'s git metadata no longer names ${record.commonDir}; remove it anyway with --force`,
        );
      }
      if (ours) {
        const paths = uncommittedOrForced(ours, input.force);
        if (paths.length > 0 && !input.force) refuseUncommitted(id, paths);
        discarded = paths.length;
      }
      runGit({ gitDir: record.commonDir }, ['worktree', 'remove', '--force', '--force', layout.workspace], { allowFail: true });
      removeOwn(layout.workspace);
      removed.push(layout.workspace);
    }
    runGit({ gitDir: record.commonDir }, ['worktree', 'prune'], { allowFail: true });
    for (const dir of [layout.home, layout.stageDir, quarantineDirOf(root, id), ...dispatchFilesOf(root, id)]) {
      if (removeOwn(dir)) removed.push(dir);
    }
    removeWorkspaceRecord(root, id);
    removed.push(recordFileOf(root, id));
    if (record.aclUids.length > 0 && !listWorkspaceRecords(root).some((r) => r.commonDir === record.commonDir)) {
      revokeCommonDir(record.commonDir, record.aclUids);
    }
    return { ok: true, id, removed, branch: record.branch, discarded };
  } finally {
    lock.release();
  }
}

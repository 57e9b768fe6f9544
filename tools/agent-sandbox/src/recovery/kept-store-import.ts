/**
 * `agent-sandbox workspace import ID`: imports, now, the git store a session of workspace ID
 * left kept after its import failed on this side (a lock held on the branch, a full disk, git
 * killed: mount-plan's kept-store.ts). Launcher starts retry such a store on their own a few
 * times; after that it waits for this command (or `rm -r <root>/git-stores/<id>`, which drops
 * its commits). The same checked import as after any session. Refused: no kept store (80), a
 * busy workspace (92), an import that fails again (87 git-store-kept: the store stays).
 */
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { guardPath } from '@agent-sandbox/path-guard';
import { readKept } from '@agent-sandbox/mount-plan';
import type { WorkspaceImportOutput } from '@agent-sandbox/shared/schemas/workspace';
import { keptRefusal } from '../git/audit.js';
import { checkWorkspaceId, existingRoot, layoutFor } from '../workspace/layout.js';
import { lockWorkspace } from '../workspace/lock.js';
import { finishKeptStore } from './store-sweep.js';

export async function workspaceImport(input: { id: string; root: string; log: (line: string) => void }): Promise<WorkspaceImportOutput> {
  const id = checkWorkspaceId(input.id);
  const root = (await guardPath({ path: existingRoot(input.root), root: input.root, kind: 'directory' })).resolved;
  const layout = layoutFor(root, id);
  const lock = lockWorkspace(layout.lockFile, layout.recordFile, id, 'importing a kept git store');
  try {
    const dir = path.join(root, 'git-stores', id);
    if (!readKept(dir)) throw new ToolError('usage', 'no-kept-store', `workspace ${id} has no kept git store (${dir}): nothing to import`);
    const gitReturn = finishKeptStore(root, id, 'agent-sandbox workspace import', input.log);
    if (!gitReturn) throw new ToolError('usage', 'no-kept-store', `workspace ${id} has no kept git store (${dir}): nothing to import`);
    if (gitReturn.storeKept) throw keptRefusal(gitReturn.storeKept);
    return { ok: true, id, gitReturn };
  } finally {
    lock.release();
  }
}

/**
 * doctor's checks of the permitted root: it exists, is a real directory, is writable and is
 * owned by the user who runs sessions (whoever else can write there can swap a workspace for a
 * link between the launcher's check and podman's mount); and whether any workspace is there
 * yet, with the exact command that makes one when none is.
 */
import { accessSync, constants, lstatSync } from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import { workspaceList } from '../../workspace/list.js';

/** The command that makes a first workspace (and the root with it). */
export function firstWorkspaceCommand(root: string, rootGiven: boolean): string {
  return `agent-sandbox workspace new fix-1 --repo /path/to/your/repo${rootGiven ? ` --root ${root}` : ''}`;
}

export function checkRoot(root: string, rootGiven: boolean, euid = process.geteuid?.() ?? 0): string {
  let info;
  try {
    info = lstatSync(root);
  } catch {
    throw new ToolError(
      'unsafePath',
      'root-not-found',
      `the root ${root} does not exist; \`${firstWorkspaceCommand(root, rootGiven)}\` makes it with a first workspace`,
    );
  }
  if (info.isSymbolicLink())
    throw new ToolError('unsafePath', 'root-is-symlink', `the root ${root} is a symlink; name the real directory with --root`);
  if (!info.isDirectory()) throw new ToolError('unsafePath', 'root-not-directory', `the root ${root} is not a directory`);
  if (info.uid !== euid)
    throw new ToolError(
      'unsafePath',
      'root-not-owned',
      `the root ${root} is owned by uid ${info.uid}, not by uid ${euid} who runs sessions; chown it, or use a root of your own`,
    );
  if ((info.mode & 0o022) !== 0)
    throw new ToolError(
      'unsafePath',
      'root-writable-by-others',
      `the root ${root} is writable by group or others (mode ${(info.mode & 0o777).toString(8)}); chmod go-w ${root}`,
    );
  try {
    accessSync(root, constants.W_OK | constants.X_OK);
  } catch {
    throw new ToolError('unsafePath', 'root-not-writable', `the root ${root} is not writable by uid ${euid}`);
  }
  return root;
}

export async function checkWorkspaces(root: string, ledgerFile: string, rootGiven: boolean): Promise<string> {
  const { workspaces } = await workspaceList(root, ledgerFile);
  if (workspaces.length === 0) {
    throw new ToolError('usage', 'no-workspace', `no workspace in ${root} yet; make one: ${firstWorkspaceCommand(root, rootGiven)}`);
  }
  const busy = workspaces.filter((w) => w.busy).length;
  return `${workspaces.length} (${workspaces
    .map((w) => w.id)
    .slice(0, 5)
    .join(', ')}${workspaces.length > 5 ? ', ...' : ''})${busy ? `, ${busy} running` : ''}`;
}

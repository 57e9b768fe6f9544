/**
 * The session home (<root>/homes/<id>, mounted at /sandbox/home): given to the agent user
 * before the run, and cleared of installed credential copies after it. cred-stage installs
 * the copy inside the container's HOME; because that HOME is a host directory, the copy (and
 * any token refreshed into it) would otherwise outlive the container on the host.
 */
import { lstatSync, lchownSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { agentGid, agentUid, containerHome } from '@agent-sandbox/shared/container-layout';

/** Rootful podman runs the agent as uid 1000 with no capabilities: the home must be its own. */
export function prepareHome(home: string, euid: number): void {
  const info = lstatSync(home);
  if (info.isSymbolicLink() || !info.isDirectory()) {
    throw new ToolError('unsafePath', 'home-not-directory', `session home ${home} is a symlink or not a directory`);
  }
  if (euid === 0 && (info.uid !== agentUid || info.gid !== agentGid)) lchownSync(home, agentUid, agentGid);
}

/** The host path of a container path under /sandbox/home, or undefined when it is elsewhere. */
export function hostPathInHome(home: string, containerPath: string): string | undefined {
  const rel = path.posix.relative(containerHome, containerPath);
  if (rel === '' || rel.startsWith('..') || path.posix.isAbsolute(rel)) return undefined;
  return path.join(home, ...rel.split('/'));
}

/** Host paths of the credential copies the container installs in the home. */
export function installedPaths(home: string, installs: { to: string }[]): string[] {
  return installs.map((step) => hostPathInHome(home, step.to)).filter((p): p is string => p !== undefined);
}

/** Removes the installed credential copies from the host side of the home. */
export function scrubInstalled(paths: string[]): void {
  for (const file of paths) rmSync(file, { force: true });
}

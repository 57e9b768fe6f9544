/**
 * The session home (<root>/homes/<id>, mounted at /sandbox/home): given to the agent user
 * before the run, and cleared of installed credential copies after it. cred-stage installs
 * the copy inside the container's HOME; because that HOME is a host directory, the copy (and
 * any token refreshed into it) would otherwise outlive the container on the host.
 *
 * The agent can replace any directory of its home with a symbolic link (`.codex ->
 * /home/<user>/.codex`), and the kernel follows every component but the last, so the clean-up
 * resolves each path beneath the home without following a link (shared/beneath): a link met
 * is removed as a link and reported, and its target is never touched. Besides this session's
 * copies, the credential paths of every runtime and the entrypoint log are cleared of links,
 * so a later session in the same home (another runtime) starts without one.
 */
import { lstatSync, lchownSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { clearLinkBeneath, removeBeneath, type Removed } from '@agent-sandbox/shared/beneath';
import { boundedList, describeBounded } from '@agent-sandbox/shared/bounded-list';
import { agentGid, agentUid, containerHome, entrypointLogName } from '@agent-sandbox/shared/container-layout';
import type { PlantedLinks } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { credentialTable } from '@agent-sandbox/cred-stage';

/** A link the session left on a clean-up path: where (as the session saw it) and what it pointed at. */
export type PlantedLink = PlantedLinks['named'][number];

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

/** Every path in a home the launcher acts on after any session: each runtime's credential copy, the entrypoint log. */
export function cleanupPaths(home: string): string[] {
  return [...credentialTable.map((row) => path.join(home, ...row.containerPath.split('/'))), path.join(home, entrypointLogName)];
}

/** The report of a removal as a ledger entry, when a link was met. */
export function plantedOf(home: string, removed: Removed): PlantedLink | undefined {
  if (!removed.plantedLink) return undefined;
  const rel = path.relative(home, removed.plantedLink).split(path.sep).join('/');
  return { path: `${containerHome}/${rel}`, target: removed.linkTarget ?? '' };
}

/**
 * Removes the installed credential copies from the host side of the home and clears every
 * clean-up path of links; returns the links the session planted (each removed as a link).
 * Call once the container is gone.
 */
export function scrubHome(home: string, installed: string[]): PlantedLink[] {
  const planted = new Map<string, PlantedLink>();
  const note = (entry: PlantedLink | undefined) => entry && planted.set(entry.path, entry);
  for (const file of installed) note(plantedOf(home, removeBeneath(home, file)));
  for (const file of cleanupPaths(home)) if (!installed.includes(file)) note(plantedOf(home, clearLinkBeneath(home, file)));
  return [...planted.values()];
}

/** The ledger's `planted`: at most 20 named, then a count. */
export function plantedField(planted: PlantedLink[]): PlantedLinks | undefined {
  return planted.length > 0 ? boundedList(planted) : undefined;
}

/** The stderr line about planted links (every name the session chose escaped), or undefined when there were none. */
export function describePlanted(sessionId: string, planted: PlantedLink[]): string | undefined {
  const field = plantedField(planted);
  if (!field) return undefined;
  const named = { named: field.named.map((p) => `${forTerminal(p.path)} -> ${forTerminal(p.target)}`), others: field.others };
  return `agent-sandbox: session ${sessionId} left symbolic links where the launcher cleans up: ${describeBounded(named)}; each was removed as a link, nothing it pointed at was touched`;
}

/**
 * The host package caches a session gets (--cache npm,pnpm,pip, or the config file's default):
 * each host directory is the lower layer of podman's overlay volume (`:O`), never written; what
 * the session writes there goes to an upper directory of its own,
 * <root>/cache-layers/<id>/<name>/upper, made empty before the container and removed after it
 * (and by the sweep of a dead launcher), so nothing reaches the host's cache or another
 * session; the disk ceiling counts it with the workspace and the home. The session sees
 * it at /sandbox/caches/<name> (not in its home: no mount point is made in a directory the
 * session writes), and the package manager's own variable names it. What it may fetch is still
 * the broker's call. A cache the host does not have is skipped and said; one that is a link,
 * not a directory, or resolves outside the user's home is refused (86).
 */
import { existsSync, lstatSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ToolError, parseJsonDocument, validateDocument } from '@agent-sandbox/shared';
import { removeBeneath } from '@agent-sandbox/shared/beneath';
import { cachesMount } from '@agent-sandbox/shared/container-layout';
import { LauncherConfig, type CacheGrant, type CacheName } from '@agent-sandbox/shared/validators/agent-sandbox-config';
import type { MountEntry } from '@agent-sandbox/shared/schemas/mount-plan';
import { guardPath } from '@agent-sandbox/path-guard';
import { defaultConfigPath, homeOf, hostCacheDirs } from '../paths.js';
import type { LaunchRequest } from './request.js';

export type { CacheGrant };

/** What the session gets of its caches: the mounts, the variables that name them, the ledger's record, and those skipped. */
export interface PlannedCaches {
  mounts: MountEntry[];
  env: Record<string, string>;
  grants: CacheGrant[];
  /** One line each on stderr: a cache asked for that the host does not have. */
  skipped: string[];
}

export const noCaches: PlannedCaches = { mounts: [], env: {}, grants: [], skipped: [] };

/** The variable each package manager reads for its cache (npm's and pnpm's npm_config_*, pip's own). */
const cacheEnvName: Record<CacheName, string> = { npm: 'npm_config_cache', pnpm: 'npm_config_store_dir', pip: 'PIP_CACHE_DIR' };

/** The launcher's config file: none is no default; one that is not JSON or not the schema is refused (80, naming the file). */
export function readLauncherConfig(file: string): LauncherConfig {
  if (!existsSync(file)) return {};
  return validateDocument(LauncherConfig, parseJsonDocument(readFileSync(file, 'utf8'), file), file);
}

/** The caches asked for: --cache as given (none: []), else the config file's default. */
export function cachesAsked(request: Pick<LaunchRequest, 'caches'>, env: NodeJS.ProcessEnv): CacheName[] {
  return [...new Set(request.caches ?? readLauncherConfig(defaultConfigPath(env)).cache ?? [])];
}

/** The host directory of one cache, checked: undefined when it does not exist; a link, a non-directory or outside the home refused (86). */
async function hostDirOf(name: CacheName, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const dir = hostCacheDirs(env)[name];
  const unsafe = (why: string) => new ToolError('unsafePath', 'cache-dir-unsafe', `--cache ${name}: ${dir} ${why}`);
  let info;
  try {
    info = lstatSync(dir);
  } catch {
    return undefined;
  }
  if (info.isSymbolicLink()) throw unsafe('is a symbolic link; only a real directory is given');
  if (!info.isDirectory()) throw unsafe('is not a directory');
  try {
    return (await guardPath({ path: dir, root: homeOf(env), kind: 'directory' })).resolved;
  } catch (err) {
    throw unsafe(`is not under the home ${homeOf(env)} after realpath (${(err as Error).message})`);
  }
}

/** The mounts and variables of the caches asked for, their layers under `layerDir`; the host's checks (86) come first. */
export async function planCaches(names: readonly CacheName[], env: NodeJS.ProcessEnv, layerDir: string): Promise<PlannedCaches> {
  const planned: PlannedCaches = { mounts: [], env: {}, grants: [], skipped: [] };
  for (const name of names) {
    const host = await hostDirOf(name, env);
    if (!host) {
      planned.skipped.push(
        `agent-sandbox: --cache ${name}: ${hostCacheDirs(env)[name]} does not exist; the session runs without that cache`,
      );
      continue;
    }
    const container = `${cachesMount}/${name}`;
    const overlay = { upper: path.join(layerDir, name, 'upper'), work: path.join(layerDir, name, 'work') };
    planned.mounts.push({ source: host, destination: container, readOnly: false, overlay });
    planned.env[cacheEnvName[name]] = container;
    planned.grants.push({ name, host, container });
  }
  return planned;
}

/**
 * Removes a session's cache layers (beneath <root>/cache-layers, following no link the session
 * left in them): after its container is gone, and before it starts, so no layer outlives its
 * session into the next.
 */
export function removeCacheLayers(layerDir: string): void {
  removeBeneath(path.dirname(layerDir), layerDir);
}

/** Empty upper and work directories for each overlay mount (podman makes neither), after whatever an earlier session left is gone. */
export function prepareCacheLayers(layerDir: string, mounts: readonly MountEntry[]): void {
  removeCacheLayers(layerDir);
  for (const m of mounts) {
    if (!m.overlay) continue;
    mkdirSync(m.overlay.upper, { recursive: true, mode: 0o700 });
    mkdirSync(m.overlay.work, { recursive: true, mode: 0o700 });
  }
}

/**
 * prepareGitView: makes the view a plan describes (git-view.ts) on the host, right before the
 * container starts. Until it has run, the plan's shadow sources do not exist and podman refuses
 * to start: a launcher that forgets it fails closed.
 *
 * What it creates, all below `<root>/git-views/<id>/` (removed by finishGitView) except the
 * placeholders:
 * - `shadow/`: the symlinks, the empty mount points, and (full git dir) copies of HEAD, index,
 *   ORIG_HEAD and any sharedindex.* files; owned by the repository's owner (the agent's uid).
 * - `packed/`: the packed-refs chain. git resolves at most 5 symlinks to find where to put
 *   `packed-refs.lock` (lockfile.c, MAXDEPTH); the kernel follows all of them to read. The chain
 *   shadow/packed-refs -> packed/l1 -> ... -> packed/l5 -> live/packed-refs makes git lock
 *   `packed/l5.lock` (creatable) while it reads the live file. Deleting a loose-only pseudo-ref
 *   (CHERRY_PICK_HEAD, AUTO_MERGE) only takes that lock, so cherry-pick, revert, rebase, stash
 *   work. Rewriting packed-refs (branch -d, tag -d, pack-refs) renames onto `l5`: `packed/` is
 *   sticky and the links belong to another uid than the agent's, so the rename fails (EPERM)
 *   and the host's packed-refs is never forked. Where prepare runs as the agent's own uid
 *   (rootless), that protection is impossible: `l1` then points at the live file directly, git
 *   locks inside the read-only view (EROFS), and every ref deletion fails instead. Both modes
 *   fail loudly if git ever follows more or fewer links.
 * - placeholders in the real git dir (an empty `config.worktree`, an empty `modules/`, `logs/`)
 *   when missing, so a read-only mount can cover them: harmless (an empty config file, empty
 *   directories git would create itself); those marked removeAfter are removed by finish when
 *   still empty.
 * - `view.json`: what was made, outside every mount, read back by finishGitView (also after a
 *   launcher that died: the sweep calls finish with the directory).
 */
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs/promises';
import { constants } from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import type { GitView } from '@agent-sandbox/shared/schemas/mount-plan';
import { gitLiveMount, gitPackedMount } from './git-view.js';

export type PackedMode = 'sticky-chain' | 'read-only';

export interface CopiedFile {
  name: string;
  /** sha256 of the host file when copied in; null when it did not exist. */
  sha256: string | null;
}

export interface ViewManifest {
  version: 1;
  view: GitView;
  packedMode: PackedMode;
  owner: { uid: number; gid: number };
  /** Placeholders this prepare created (finish removes those marked removeAfter when still empty). */
  created: string[];
  copied: CopiedFile[];
}

export const manifestName = 'view.json';

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Reads a regular file without following a symlink at the last component; null when absent. */
export async function readPlain(path: string): Promise<Buffer | null> {
  let handle;
  try {
    handle = await nodeFs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    if (!(await handle.stat()).isFile()) throw new Error(`${path} is not a regular file`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

export function sha256(data: Buffer | null): string | null {
  return data === null ? null : createHash('sha256').update(data).digest('hex');
}

async function chownIfRoot(path: string, owner: { uid: number; gid: number }): Promise<void> {
  if (process.getuid?.() === 0) await nodeFs.lchown(path, owner.uid, owner.gid);
}

/** The `<root>/git-views` parent: a real directory (never a symlink), created when missing. */
async function ensureViewsParent(dir: string): Promise<void> {
  const parent = dir.slice(0, dir.lastIndexOf('/'));
  await nodeFs.mkdir(parent, { mode: 0o755 }).catch((err) => {
    if (errnoOf(err) !== 'EEXIST') throw err;
  });
  const info = await nodeFs.lstat(parent);
  if (!info.isDirectory()) throw new ToolError('unsafePath', 'symlink-escape', `${parent} is not a plain directory`);
}

async function makePacked(view: GitView, owner: { uid: number }): Promise<PackedMode> {
  await nodeFs.mkdir(view.packed, { mode: 0o755 });
  const mode: PackedMode = process.getuid?.() !== owner.uid ? 'sticky-chain' : 'read-only';
  if (mode === 'read-only') {
    await nodeFs.symlink(`${gitLiveMount}/packed-refs`, `${view.packed}/l1`);
    return mode;
  }
  for (let i = 1; i <= 4; i += 1) await nodeFs.symlink(`${gitPackedMount}/l${i + 1}`, `${view.packed}/l${i}`);
  await nodeFs.symlink(`${gitLiveMount}/packed-refs`, `${view.packed}/l5`);
  await nodeFs.chmod(view.packed, 0o1777);
  return mode;
}

async function makeShadow(view: GitView, owner: { uid: number; gid: number }): Promise<CopiedFile[]> {
  await nodeFs.mkdir(view.shadow, { mode: 0o755 });
  await chownIfRoot(view.shadow, owner);
  for (const link of view.links) {
    await nodeFs.symlink(link.target, `${view.shadow}/${link.name}`);
    await chownIfRoot(`${view.shadow}/${link.name}`, owner);
  }
  for (const name of view.mountPoints) await nodeFs.mkdir(`${view.shadow}/${name}`, { mode: 0o755 });
  const names = [...view.copies];
  for (const entry of await nodeFs.readdir(view.gitDir)) if (/^sharedindex\.[0-9a-f]+$/.test(entry)) names.push(entry);
  const copied: CopiedFile[] = [];
  for (const name of names) {
    const data = await readPlain(`${view.gitDir}/${name}`);
    if (data !== null) {
      await nodeFs.writeFile(`${view.shadow}/${name}`, data, { mode: 0o644, flag: 'wx' });
      await chownIfRoot(`${view.shadow}/${name}`, owner);
    }
    copied.push({ name, sha256: sha256(data) });
  }
  return copied;
}

async function makePlaceholders(view: GitView, owner: { uid: number; gid: number }, created: string[]): Promise<void> {
  for (const p of view.placeholders) {
    try {
      if (p.type === 'dir') await nodeFs.mkdir(p.path, { mode: 0o755 });
      else await (await nodeFs.open(p.path, 'wx', 0o644)).close();
    } catch (err) {
      if (errnoOf(err) === 'EEXIST') continue;
      throw err;
    }
    created.push(p.path);
    await chownIfRoot(p.path, owner);
  }
}

/**
 * Makes the view. Refuses (87, git-view-exists) when `<root>/git-views/<id>` already exists: a
 * session with this id was not finished (run finishGitView on it first). Undoes itself on failure.
 */
export async function prepareGitView(view: GitView): Promise<ViewManifest> {
  await ensureViewsParent(view.dir);
  try {
    await nodeFs.mkdir(view.dir, { mode: 0o755 });
  } catch (err) {
    if (errnoOf(err) !== 'EEXIST') throw err;
    throw new ToolError('gitMount', 'git-view-exists', `${view.dir} exists: a session with this id was not finished (finishGitView)`);
  }
  const created: string[] = [];
  try {
    const info = await nodeFs.stat(view.gitDir);
    const owner = { uid: info.uid, gid: info.gid };
    const packedMode = await makePacked(view, owner);
    const copied = await makeShadow(view, owner);
    await makePlaceholders(view, owner, created);
    const manifest: ViewManifest = { version: 1, view, packedMode, owner, created, copied };
    await nodeFs.writeFile(`${view.dir}/${manifestName}`, `${JSON.stringify(manifest)}\n`, { mode: 0o600, flag: 'wx' });
    return manifest;
  } catch (err) {
    for (const path of created.reverse()) await nodeFs.rm(path, { recursive: false, force: true }).catch(() => nodeFs.rmdir(path).catch(() => undefined));
    await nodeFs.rm(view.dir, { recursive: true, force: true });
    throw err;
  }
}

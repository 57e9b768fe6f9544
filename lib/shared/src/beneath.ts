/**
 * Host-side file operations under a directory a session could write (its home, its workspace,
 * its git store, the staging directories), that never follow a symbolic link in any component.
 *
 * The agent can plant `home/.codex -> /home/<user>/.codex`; the kernel follows every component
 * but the last even for unlink(2), so `rm <home>/.codex/auth.json` would remove the user's real
 * credential. Here a path is resolved beneath its root one component at a time with lstat, and
 * the first symbolic link met (or a component that is not a directory) ends the walk: the link
 * is what the caller acts on (removed as a link, never through), and it is reported, so the
 * ledger can name what the agent planted.
 *
 * Paths may carry names read as bytes (byte-names.ts): every call gets the exact bytes back.
 *
 * Call these only once the container is gone: nothing of the session runs then, so what lstat
 * saw is what the next call acts on. The root itself is the launcher's own directory and must
 * be a real directory (never a link).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, rmSync, type Stats } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fsPath, nameFromBytes } from './byte-names.js';

export interface Walked {
  /** The deepest path reached without following a link. */
  reached: string;
  /** The first symbolic link met on the way (the target itself included), when there was one. */
  link?: string;
  /** A component that is neither a directory nor a link, met before the last one (a file where a directory should be). */
  blocked?: string;
  /** The target's own lstat, when the walk reached it. */
  stats?: Stats;
}

function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(fsPath(p));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/** The components of `target` below `root`; throws when it is not strictly beneath. */
function componentsBeneath(root: string, target: string): string[] {
  const rel = path.relative(root, target);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel))
    throw new Error(`${target} is not beneath ${root}`);
  return rel.split(path.sep);
}

/** Walks from `root` to `target` with lstat, stopping at the first link, file-in-the-way or missing component. */
export function walkBeneath(root: string, target: string): Walked {
  const parts = componentsBeneath(root, target);
  const rootStats = lstatOrUndefined(root);
  // A root that is not there holds nothing; one that is a link or a file is never walked.
  if (!rootStats) return { reached: root };
  if (rootStats.isSymbolicLink() || !rootStats.isDirectory()) throw new Error(`${root} is not a real directory`);
  let at = root;
  for (let i = 0; i < parts.length; i += 1) {
    const next = path.join(at, parts[i]!);
    const stats = lstatOrUndefined(next);
    if (!stats) return { reached: at };
    if (stats.isSymbolicLink()) return { reached: at, link: next };
    if (i === parts.length - 1) return { reached: next, stats };
    if (!stats.isDirectory()) return { reached: at, blocked: next };
    at = next;
  }
  return { reached: at };
}

export interface Removed {
  /** The target was there and is gone. */
  removed: boolean;
  /** A symbolic link met on the way (or the target itself), removed as a link: what the session planted. */
  plantedLink?: string;
  /** What that link pointed at, as the session wrote it, without loss (byte-names; never resolved, never followed). */
  linkTarget?: string;
}

/** Unlinks a link the walk met, reporting it with what it pointed at. */
function unlinkPlanted(link: string, target: string): Removed {
  let linkTarget: string | undefined;
  try {
    linkTarget = nameFromBytes(readlinkSync(fsPath(link), 'buffer'));
  } catch {
    // gone already, or not a link any more: nothing to say about its target
  }
  rmSync(fsPath(link), { force: true });
  return { removed: link === target, plantedLink: link, ...(linkTarget !== undefined ? { linkTarget } : {}) };
}

/**
 * Removes a tree a session wrote, however deep: with coreutils rm, which walks the tree with
 * openat and a stack of its own on the heap (fts). Node's recursive rm recurses on the JS stack
 * and overflows from about 2 000 levels (measured: "Maximum call stack size exceeded" at 7 500),
 * and any call by full path meets PATH_MAX long before 10 000 levels. rm never follows a link
 * inside the tree, never crosses into another mount (--one-file-system), and unlinks a FIFO or a
 * socket without opening it. Throws with rm's own words when something is left.
 */
export function removeTree(target: string): void {
  const at = fsPath(target);
  // A name that is not UTF-8 cannot be an argument; such a target is never one of the launcher's own trees.
  if (typeof at !== 'string') return rmSync(at, { recursive: true, force: true });
  const r = spawnSync('rm', ['-rf', '--one-file-system', '--', at], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } });
  if (r.error) throw r.error;
  if (r.status !== 0)
    throw new Error(`could not remove ${target}: ${(r.stderr ?? '').trim().split('\n').slice(-2).join(' | ') || `rm exited ${r.status}`}`);
}

/**
 * Removes `target` (the whole tree when it is a directory: removeTree, at any depth, following
 * no link inside) beneath `root`. A link on the way is unlinked itself and reported; its target
 * is never touched.
 */
export function removeBeneath(root: string, target: string): Removed {
  const walked = walkBeneath(root, target);
  if (walked.link) return unlinkPlanted(walked.link, target);
  if (!walked.stats) return { removed: false };
  if (walked.stats.isDirectory()) removeTree(target);
  else rmSync(fsPath(target), { force: true });
  return { removed: true };
}

/**
 * Removes only a symbolic link met on the way to `target` (the target itself included), and
 * nothing else: for paths where the launcher keeps what is real (another runtime's credential
 * path in a home) but where a planted link would make a later step act through it.
 */
export function clearLinkBeneath(root: string, target: string): Removed {
  const walked = walkBeneath(root, target);
  return walked.link ? unlinkPlanted(walked.link, target) : { removed: false };
}

/**
 * Reads at most `maxBytes` of a regular file beneath `root`, following no link: undefined when it
 * is missing, a link (anywhere on the way), or not a regular file.
 */
export function readBeneath(
  root: string,
  target: string,
  maxBytes: number,
): { data: Buffer; size: number; plantedLink?: string } | { data?: undefined; plantedLink?: string } {
  const walked = walkBeneath(root, target);
  if (walked.link) return { plantedLink: walked.link };
  if (!walked.stats?.isFile()) return {};
  // O_NOFOLLOW on the last component, O_NONBLOCK so a FIFO swapped in cannot hang the read.
  const fd = openSync(fsPath(target), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.ino !== walked.stats.ino) return {};
    const buffer = Buffer.alloc(Math.min(info.size, maxBytes));
    const got = readSync(fd, buffer, 0, buffer.length, 0);
    return { data: buffer.subarray(0, got), size: info.size };
  } finally {
    closeSync(fd);
  }
}

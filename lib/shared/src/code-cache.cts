/**
 * A V8 code cache of a tool's bundle, for a bin shim that opts in (the launcher's: compiling its
 * 2 MB bundle is the largest part of its start, docs/performance.md sections 1 and 11).
 * CommonJS and node builtins only, like bin-entry.cts.
 *
 * The cache holds code that runs as the user who loads it, so it is used only when nothing but
 * that user can have written it:
 * - it lives in the user's own state, ${XDG_STATE_HOME:-$HOME/.local/state}/<tool>/code-cache;
 *   it is written only when $XDG_STATE_HOME (else $HOME) and every directory below it on the way
 *   is the user's alone, each missing one made;
 * - the file and its directory must be owned by the process's own uid and writable by no one
 *   else (no group or other write bit), the directory no symlink, the file a regular file with
 *   one link, opened without following a symlink: root's launcher never loads a user's cache;
 * - it is keyed by the bundle's size, mtime and inode (read from the descriptor the source is
 *   read from), the command, node's version and architecture, and node's flags; V8 itself checks
 *   only the source's length, its version and its flags;
 * - it is written atomically (a fresh 0600 file, renamed over), and only when there was none
 *   or it did not fit.
 * Any doubt (a missing variable, a stat that fails, a key that differs) means no cache: the
 * bundle is compiled as a plain `require` would, and nothing is written where it was refused.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';

/** Bumped when the file's layout changes. */
const layout = 'agent-sandbox-code-cache/1';
/** A command's name as it may appear in a file name; anything else gets no cache. */
const commandName = /^[a-z][a-z0-9-]{0,31}$/;

export interface CodeCacheSlot {
  dir: CodeCacheDir;
  /** The cache file. */
  file: string;
  /** What the file's first line must say for its data to be used. */
  key: string;
}

export interface CodeCacheDir {
  /** A directory that must already exist and be the user's alone ($XDG_STATE_HOME, else $HOME). */
  base: string;
  /** The levels below it, made when missing: the last is the cache's own directory. */
  levels: string[];
}

/** Where the cache lives, or undefined when the environment names no absolute base. */
export function codeCacheDir(env: NodeJS.ProcessEnv, tool: string): CodeCacheDir | undefined {
  const xdg = env.XDG_STATE_HOME;
  const home = env.HOME;
  if (xdg !== undefined && path.isAbsolute(xdg)) return { base: xdg, levels: [tool, 'code-cache'] };
  if (home !== undefined && path.isAbsolute(home)) return { base: home, levels: ['.local', 'state', tool, 'code-cache'] };
  return undefined;
}

/** The cache's directory path. */
export function codeCachePath(dir: CodeCacheDir): string {
  return path.join(dir.base, ...dir.levels);
}

/** Where the cache of `command` for this bundle source would be, or undefined when it gets none. */
export function codeCacheSlot(dir: CodeCacheDir, command: string | undefined, source: SourceFacts): CodeCacheSlot | undefined {
  if (command === undefined || !commandName.test(command)) return undefined;
  const key = JSON.stringify({
    layout,
    size: source.size,
    mtimeNs: source.mtimeNs,
    ino: source.ino,
    command,
    node: process.version,
    arch: process.arch,
    flags: process.execArgv,
  });
  return { dir, file: path.join(codeCachePath(dir), `${command}.cache`), key };
}

export interface SourceFacts {
  /** The file's text, with whatever was put around it. */
  text: string;
  /** The file's own size. */
  size: number;
  mtimeNs: string;
  ino: string;
}

/** Reads `size` bytes from the file's start into `bytes` at `at`; says how many it got (fewer at an early end). */
function readAll(fd: number, bytes: Buffer, at: number, size: number): number {
  let got = 0;
  while (got < size) {
    const n = readSync(fd, bytes, at + got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/**
 * The bundle's text, `head` and `tail` around it, and the facts of the file it was read from (one
 * descriptor; undefined if it changed meanwhile). The text is made in one piece, decoded from one
 * buffer holding head, file and tail: wrapping a text already read would keep a second copy of
 * the 2 MB bundle in the heap until a full collection, which a short run never has (about 2 MiB
 * of a launcher's private memory, docs/performance.md section 11).
 */
export function readSource(file: string, head = '', tail = ''): SourceFacts | undefined {
  const fd = openSync(file, constants.O_RDONLY);
  try {
    const before = fstatSync(fd, { bigint: true });
    const size = Number(before.size);
    const start = Buffer.byteLength(head);
    const bytes = Buffer.allocUnsafe(start + size + Buffer.byteLength(tail));
    bytes.write(head, 0);
    const got = readAll(fd, bytes, start, size);
    bytes.write(tail, start + size);
    const after = fstatSync(fd, { bigint: true });
    const text = bytes.toString('utf8');
    if (got !== size || before.mtimeNs !== after.mtimeNs || after.size !== before.size || Buffer.byteLength(text) !== bytes.length) {
      return undefined;
    }
    return { text, size, mtimeNs: String(after.mtimeNs), ino: String(after.ino) };
  } finally {
    closeSync(fd);
  }
}

/** Owned by `uid`, and no one else can write it. */
function ownedAlone(stat: { uid: number; mode: number }, uid: number): boolean {
  return stat.uid === uid && (stat.mode & 0o022) === 0;
}

/** A real directory (no symlink) owned by `uid` alone. */
export function trustedDir(dir: string, uid: number): boolean {
  try {
    const stat = lstatSync(dir);
    return stat.isDirectory() && ownedAlone(stat, uid);
  } catch {
    return false;
  }
}

/** The cached data for `slot`, or undefined on any doubt. */
export function readCodeCache(slot: CodeCacheSlot, uid: number): Buffer | undefined {
  if (!trustedDir(path.dirname(slot.file), uid)) return undefined;
  let fd: number;
  try {
    fd = openSync(slot.file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.nlink !== 1 || !ownedAlone(stat, uid)) return undefined;
    const data = readFileSync(fd);
    const header = Buffer.from(`${slot.key}\n`);
    if (data.length <= header.length || !data.subarray(0, header.length).equals(header)) return undefined;
    return data.subarray(header.length);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes the cache's directory, each missing level below the base with the given modes (umask
 * applies), and says whether every level, the base included, is the user's alone.
 */
function madeTrusted(dir: CodeCacheDir, uid: number): boolean {
  let at = dir.base;
  if (!trustedDir(at, uid)) return false;
  for (const [i, level] of dir.levels.entries()) {
    at = path.join(at, level);
    try {
      mkdirSync(at, { mode: i === dir.levels.length - 1 ? 0o700 : 0o755 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return false;
    }
    if (!trustedDir(at, uid)) return false;
  }
  return true;
}

/**
 * Writes `data` for `slot` atomically: a fresh 0600 file renamed over the cache. Writes only
 * where every directory from the base down is the user's alone. Never throws.
 */
export function writeCodeCache(slot: CodeCacheSlot, data: Buffer, uid: number): boolean {
  const temp = path.join(path.dirname(slot.file), `.${path.basename(slot.file)}.${process.pid}.tmp`);
  try {
    if (!madeTrusted(slot.dir, uid)) return false;
    // The key, then the data: no copy of the data joined to its key (it is about 1 MB, and the
    // first run of a command writes it at its exit, where its memory peaks).
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeFileSync(fd, `${slot.key}\n`);
      writeFileSync(fd, data);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, slot.file);
    return true;
  } catch {
    try {
      rmSync(temp, { force: true });
    } catch {
      // left for the next write's 'wx' to refuse and remove
    }
    return false;
  }
}

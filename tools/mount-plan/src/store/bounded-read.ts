/**
 * Reads of files a session could write, bounded: no link followed, nothing but a regular file
 * opened (a FIFO planted where a file was cannot hang the launcher), no more bytes read than the
 * caller allows, and what was not read said in words.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, readlinkSync, type Stats } from 'node:fs';
import { createHash } from 'node:crypto';
import { fsPath, nameFromBytes } from '@agent-sandbox/shared/byte-names';

/** What a name or value looks like in the ledger: at most 256 characters. */
export function clip(text: string, max = 256): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** What a read found: the whole file, or why not (it is larger than allowed, absent, or not a regular file). */
export type FileRead =
  { kind: 'file'; data: Buffer; mode: number } | { kind: 'larger'; size: number } | { kind: 'absent' } | { kind: 'other'; what: string };

/** A FIFO, socket or device node in words (what a walk moves out and never opens), or undefined for anything else. */
export function specialKind(type: Pick<Stats, 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice'>): string | undefined {
  if (type.isFIFO()) return 'a FIFO';
  if (type.isSocket()) return 'a socket';
  if (type.isCharacterDevice() || type.isBlockDevice()) return 'a device node';
  return undefined;
}

/** What a name that is not a regular file is, in words: a FIFO, a symbolic link to "...". */
export function describeNonFile(path: string, info: Stats): string {
  if (info.isSymbolicLink()) {
    let target = '';
    try {
      target = nameFromBytes(readlinkSync(fsPath(path), 'buffer'));
    } catch {
      // gone meanwhile: named without its target
    }
    return `a symbolic link to ${JSON.stringify(clip(target, 120))}`;
  }
  const special = specialKind(info);
  if (special) return special;
  if (info.isDirectory()) return 'a directory';
  return 'not a regular file';
}

/**
 * A regular file read whole when its size (st_size: a sparse file counts by its size, not what
 * it allocates) is at most `max`, and never more than that many bytes: larger, it is not read at
 * all. Nothing but a regular file is opened (lstat first: a FIFO or a device is never opened),
 * and no link is followed.
 */
export function readFileWithin(path: string, max: number): FileRead {
  const seen = lstatSync(fsPath(path), { throwIfNoEntry: false });
  if (!seen) return { kind: 'absent' };
  if (!seen.isFile()) return { kind: 'other', what: describeNonFile(path, seen) };
  let fd: number;
  try {
    fd = openSync(fsPath(path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
      ? { kind: 'absent' }
      : { kind: 'other', what: `unreadable (${(err as NodeJS.ErrnoException).code})` };
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { kind: 'other', what: 'not a regular file' };
    if (info.size > max) return { kind: 'larger', size: info.size };
    const data = Buffer.alloc(info.size);
    let got = 0;
    while (got < data.length) {
      const n = readSync(fd, data, got, data.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return { kind: 'file', data: data.subarray(0, got), mode: info.mode };
  } finally {
    closeSync(fd);
  }
}

/**
 * sha256 of a regular file of at most `max` bytes, read 1 MiB at a time (never whole in memory);
 * null when absent, undefined when it is larger or not a regular file.
 */
export function hashFileWithin(path: string, max: number): string | null | undefined {
  const seen = lstatSync(fsPath(path), { throwIfNoEntry: false });
  if (!seen) return null;
  if (!seen.isFile() || seen.size > max) return undefined;
  const fd = openSync(fsPath(path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > max) return undefined;
    const hash = createHash('sha256');
    const chunk = Buffer.alloc(Math.min(1 << 20, Math.max(1, info.size)));
    let at = 0;
    while (at < info.size) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, info.size - at), at);
      if (n === 0) break;
      hash.update(chunk.subarray(0, n));
      at += n;
    }
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/** At most `max` bytes of a regular file and its mode, following no link; undefined when it is anything else. */
export function readRegularBounded(path: string, max: number): { data: Buffer; mode: number } | undefined {
  let fd: number;
  try {
    fd = openSync(fsPath(path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return undefined;
    const buffer = Buffer.alloc(Math.min(info.size, max));
    return { data: buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)), mode: info.mode };
  } finally {
    closeSync(fd);
  }
}

/** At most `max` bytes of a regular file, following no link; undefined when it is anything else. */
export function readPlainBounded(path: string, max: number): Buffer | undefined {
  return readRegularBounded(path, max)?.data;
}

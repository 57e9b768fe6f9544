/**
 * The index a session leaves, read as data, never by git: git's own reading of an index trusts
 * the paths it lists (its `checkout -- .` writes them, `..` and all), and a session's index is
 * the session's to write. This parser reads git's index format (gitformat-index(5)) versions 2,
 * 3 and 4: the 12-byte header `DIRC`, version, entry count; each entry's 40 bytes of stat data,
 * its mode, object id and flags (v3+: 2 more bytes when the extended bit is set), its path (v2
 * and v3: NUL-terminated and padded with NULs to a multiple of 8 bytes; v4: a varint saying how
 * many bytes of the previous path to drop, then the rest, NUL-terminated); the extensions; and
 * the trailing checksum of everything before it (all zeros when git wrote it with
 * index.skipHash). Anything else is refused with why: the caller then does not take the index.
 *
 * Pure: bytes in, entries out.
 */
import { createHash } from 'node:crypto';
import { nameFromBytes } from '@agent-sandbox/shared/byte-names';

export interface IndexEntry {
  /** The mode as git stores it (100644, 100755, 120000, 160000...), octal text. */
  mode: string;
  oid: string;
  stage: number;
  /** The path's bytes as a string without loss (shared/byte-names). */
  path: string;
}

export interface IndexFile {
  version: 2 | 3 | 4;
  entries: IndexEntry[];
  /** The extensions' four-letter signatures, in order (TREE, REUC, link, UNTR, sdir...). */
  extensions: string[];
}

export class IndexFormatError extends Error {
  override name = 'IndexFormatError';
}

const statBytes = 40;
const flagsBytes = 2;
const extendedFlag = 0x4000;
const nameMask = 0x0fff;

/** git's varint (varint.c): 7 bits a byte, high bit set on all but the last, each continuation adding one. */
export function readVarint(data: Buffer, at: number): { value: number; next: number } {
  let i = at;
  let c = byteAt(data, i++);
  let value = c & 127;
  while (c & 128) {
    c = byteAt(data, i++);
    value = (value + 1) * 128 + (c & 127);
    if (value > Number.MAX_SAFE_INTEGER / 256) throw new IndexFormatError(`a path prefix length at byte ${at} is out of range`);
  }
  return { value, next: i };
}

function byteAt(data: Buffer, i: number): number {
  if (i >= data.length) throw new IndexFormatError('it ends inside an entry');
  return data[i]!;
}

/** The checksum git writes last: the hash (SHA-1, or SHA-256 in a sha256 repository) of the bytes before it, or zeros. */
function checkTrailer(data: Buffer, oidBytes: number): Buffer {
  if (data.length < 12 + oidBytes) throw new IndexFormatError('it is shorter than a header and its checksum');
  const body = data.subarray(0, data.length - oidBytes);
  const trailer = data.subarray(data.length - oidBytes);
  if (trailer.every((b) => b === 0)) return body;
  const want = createHash(oidBytes === 20 ? 'sha1' : 'sha256')
    .update(body)
    .digest();
  if (!want.equals(trailer)) throw new IndexFormatError('its checksum does not match its content');
  return body;
}

/** One entry at `at`; returns it and where the next one starts. */
function readEntry(
  body: Buffer,
  at: number,
  version: number,
  oidBytes: number,
  previous: Buffer,
): { entry: IndexEntry; path: Buffer; next: number } {
  const fixed = statBytes + oidBytes + flagsBytes;
  if (at + fixed > body.length) throw new IndexFormatError('it ends inside an entry');
  const mode = body.readUInt32BE(at + 24);
  const oid = body.subarray(at + statBytes, at + statBytes + oidBytes).toString('hex');
  const flags = body.readUInt16BE(at + statBytes + oidBytes);
  let i = at + fixed;
  if (flags & extendedFlag) {
    if (version < 3) throw new IndexFormatError(`an entry at byte ${at} has extended flags, which version ${version} does not have`);
    i += 2;
  }
  let path: Buffer;
  if (version === 4) {
    const { value: drop, next } = readVarint(body, i);
    if (drop > previous.length) throw new IndexFormatError(`an entry at byte ${at} drops more of the previous path than it has`);
    const end = body.indexOf(0, next);
    if (end < 0) throw new IndexFormatError('a path has no end');
    path = Buffer.concat([previous.subarray(0, previous.length - drop), body.subarray(next, end)]);
    i = end + 1;
  } else {
    const end = body.indexOf(0, i);
    if (end < 0) throw new IndexFormatError('a path has no end');
    path = body.subarray(i, end);
    // 1 to 8 NULs, so that the entry's length is a multiple of 8.
    i = at + Math.floor((end - at + 8) / 8) * 8;
    if (i > body.length) throw new IndexFormatError('it ends inside an entry');
  }
  const named = flags & nameMask;
  if (named !== nameMask && named !== path.length)
    throw new IndexFormatError(`an entry at byte ${at} says its path has ${named} bytes, not ${path.length}`);
  return { entry: { mode: mode.toString(8).padStart(6, '0'), oid, stage: (flags >> 12) & 3, path: nameFromBytes(path) }, path, next: i };
}

/** The extensions after the entries: each a 4-byte signature, a 4-byte size, that many bytes. */
function readExtensions(body: Buffer, at: number): string[] {
  const out: string[] = [];
  let i = at;
  while (i < body.length) {
    if (i + 8 > body.length) throw new IndexFormatError('an extension header is cut short');
    const size = body.readUInt32BE(i + 4);
    if (i + 8 + size > body.length)
      throw new IndexFormatError(`the extension ${JSON.stringify(body.subarray(i, i + 4).toString('latin1'))} runs past the end`);
    out.push(body.subarray(i, i + 4).toString('latin1'));
    i += 8 + size;
  }
  return out;
}

/** Reads an index file; `oidBytes` 20 for a SHA-1 repository, 32 for SHA-256. Throws IndexFormatError with why. */
export function parseIndex(data: Buffer, oidBytes: 20 | 32 = 20): IndexFile {
  const body = checkTrailer(data, oidBytes);
  if (body.subarray(0, 4).toString('latin1') !== 'DIRC') throw new IndexFormatError('it does not begin with DIRC');
  const version = body.readUInt32BE(4);
  if (version !== 2 && version !== 3 && version !== 4) throw new IndexFormatError(`version ${version} is not 2, 3 or 4`);
  const count = body.readUInt32BE(8);
  // Each entry takes at least its fixed part and a NUL: a count larger than the file could hold is a lie.
  if (count > (body.length - 12) / (statBytes + oidBytes + flagsBytes + 1))
    throw new IndexFormatError(`it claims ${count} entries, more than its size holds`);
  const entries: IndexEntry[] = [];
  let at = 12;
  let previous: Buffer = Buffer.alloc(0);
  for (let n = 0; n < count; n += 1) {
    const read = readEntry(body, at, version, oidBytes, previous);
    entries.push(read.entry);
    previous = read.path;
    at = read.next;
  }
  return { version, entries, extensions: readExtensions(body, at) };
}

/**
 * A path git would not check out (its verify_path, with core.protectNTFS, git's default): empty,
 * absolute, an empty, `.` or `..` component, or a component that is `.git` in any case, also with
 * trailing dots or spaces or as its short name `git~1`; a backslash counts as a separator, as
 * protectNTFS has it. An index is only a list of paths, and git's `checkout -- .` writes what
 * it lists: such an entry would write outside the worktree or into a git dir (a hook the
 * owner's next checkout runs). Stricter than git is harmless here: the index is then rebuilt.
 */
export function unsafeIndexPath(p: string): boolean {
  if (p === '' || p.startsWith('/')) return true;
  return p.split(/[/\\]/).some((c) => {
    const lower = c.toLowerCase();
    return c === '' || c === '.' || c === '..' || lower.replace(/[. ]+$/, '') === '.git' || lower === 'git~1';
  });
}

import { readdirSync, type Dirent } from 'node:fs';

/**
 * File names as the kernel has them (bytes), carried in JavaScript strings without losing any.
 * A session can name a file with bytes that are not UTF-8; node's default decoding turns each
 * into U+FFFD, and a walk that then joins the decoded name into a path reaches nothing: a
 * nested repository or a ref named that way would be missed by the audit. Here valid UTF-8 is
 * decoded as usual and every other byte (0x80..0xFF) becomes the lone surrogate U+DC00+byte,
 * U+DC80..U+DCFF (Python's "surrogateescape"), which no valid UTF-8 decodes to, so the mapping
 * is one to one and bytesFromName gives the kernel back the exact name. forTerminal shows such a code point as
 * the byte it stands for (`\xNN`), and so do the JSON documents the launcher writes (the ledger
 * line, through bytesAsEscapes): a lone surrogate is not well-formed Unicode, and strict JSON
 * parsers refuse it.
 */

/** The length of the valid UTF-8 sequence starting at `i`, or 0 when it is not one. */
export function utf8Length(bytes: Uint8Array, i: number): number {
  const b = bytes[i]!;
  const need = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
  if (need <= 1) return need;
  if (i + need > bytes.length) return 0;
  for (let k = 1; k < need; k += 1) if ((bytes[i + k]! & 0xc0) !== 0x80) return 0;
  const second = bytes[i + 1]!;
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  if (b === 0xe0 && second < 0xa0) return 0;
  if (b === 0xed && second >= 0xa0) return 0;
  if (b === 0xf0 && second < 0x90) return 0;
  if (b === 0xf4 && second >= 0x90) return 0;
  return need;
}

/** U+DC00 + byte stands for a byte (0x80..0xFF) that is not part of valid UTF-8. */
const escapedByteBase = 0xdc00;

/** A byte as the four characters `\xNN`: how the terminal and the launcher's documents show a byte that is not UTF-8. */
export function byteEscape(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}

/** The byte a code point stands for, or undefined when it is not one of U+DC80..U+DCFF. */
export function escapedByte(cp: number): number | undefined {
  return cp >= 0xdc80 && cp <= 0xdcff ? cp - escapedByteBase : undefined;
}

/** Bytes -> a string: valid UTF-8 decoded, each other byte as U+DC00+byte. */
export function nameFromBytes(bytes: Uint8Array): string {
  // Fast path, exact: node's decoder puts U+FFFD for every sequence that is not UTF-8, so a
  // decoding without one lost nothing (most names; the audit walks 100 000 of them).
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (!text.includes('\ufffd')) return text;
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const n = utf8Length(bytes, i);
    if (n === 0) {
      out += String.fromCharCode(escapedByteBase + bytes[i]!);
      i += 1;
      continue;
    }
    out += Buffer.from(bytes.subarray(i, i + n)).toString('utf8');
    i += n;
  }
  return out;
}

/** A lone U+DC80..U+DCFF (with the u flag a surrogate pair is one code point, never matched). */
const carriesBytes = /[\udc80-\udcff]/u;

/** A string from nameFromBytes (or any string) -> the bytes of the name. */
export function bytesFromName(name: string): Buffer {
  if (!carriesBytes.test(name)) return Buffer.from(name, 'utf8');
  const parts: Buffer[] = [];
  for (const ch of name) {
    const byte = escapedByte(ch.codePointAt(0)!);
    parts.push(byte !== undefined ? Buffer.from([byte]) : Buffer.from(ch, 'utf8'));
  }
  return Buffer.concat(parts);
}

/** The path to give a file system call: the string itself unless it carries bytes that are not UTF-8. */
export function fsPath(name: string): string | Buffer {
  return carriesBytes.test(name) ? bytesFromName(name) : name;
}

/** A directory entry: its name without loss, and its type as readdir gave it. */
export interface NamedEntry {
  name: string;
  type: Dirent<string> | Dirent<Buffer>;
}

/**
 * readdir with types, every name without loss: node's decoding first (fast: the audit lists
 * 100 000 entries), and only when a name holds U+FFFD (a byte that may not be UTF-8) the
 * directory again as bytes.
 */
export function readdirTyped(dir: string): NamedEntry[] {
  const at = fsPath(dir);
  const decoded = readdirSync(at, { withFileTypes: true });
  if (!decoded.some((d) => d.name.includes('\ufffd'))) return decoded.map((type) => ({ name: type.name, type }));
  return readdirSync(at, { withFileTypes: true, encoding: 'buffer' }).map((type) => ({ name: nameFromBytes(type.name), type }));
}

/** The names in a directory, without loss. */
export function readdirNames(dir: string): string[] {
  return readdirTyped(dir).map((e) => e.name);
}

/** Every U+DC80..U+DCFF in `text` (g: each one; u: a surrogate pair is one code point, never matched). */
const carriedBytes = /[\udc80-\udcff]/gu;

/**
 * The text a document carries for a name: each byte that is not UTF-8 written as the four
 * characters `\xNN`, as the terminal shows it, so any JSON parser reads the document. It is a
 * report, not the name: a valid name that itself holds the text `\x9b` reads the same (the
 * exact bytes stay with the kernel, and a quarantine's restore script writes them).
 */
export function bytesAsEscapes(text: string): string {
  return carriesBytes.test(text) ? text.replace(carriedBytes, (ch) => byteEscape(escapedByte(ch.charCodeAt(0))!)) : text;
}

/** `value` with bytesAsEscapes applied to every string in it (keys included), a copy where anything changed. */
export function withBytesAsEscapes<T>(value: T): T {
  if (typeof value === 'string') return bytesAsEscapes(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => withBytesAsEscapes(item)) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[bytesAsEscapes(key)] = withBytesAsEscapes(item);
  return out as T;
}

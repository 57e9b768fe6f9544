/**
 * Text that came from a session (a path, a ref, a host name, a line the entrypoint wrote) made
 * safe to print on the user's terminal. The agent chooses those names: raw, an ESC or a C1
 * control would set the terminal's title, erase or move lines (hiding the launcher's warnings or
 * forging an "all clean" line), or write the clipboard (OSC 52). Every byte that is not printable
 * is shown as an escape, the way `ls -b` and git's core.quotePath do:
 *
 * - C0 controls, DEL and the C1 controls (U+0080..U+009F): `\a \b \t \n \v \f \r \e` where they
 *   have a name, else `\xNN` (C1 as the code point, `\u0085`);
 * - a backslash is doubled, so an escape in the output always came from this function;
 * - bytes that are not valid UTF-8: `\xNN` each (from a Buffer, or from a string that carries
 *   them as shared/byte-names does; a string decoded the default way holds U+FFFD instead);
 * - Unicode line and paragraph separators and the bidirectional controls that reorder what the
 *   user reads (U+2028, U+2029; the overrides and embeddings U+202A..U+202E, the isolates
 *   U+2066..U+2069, the marks U+200E, U+200F, U+061C): `\uNNNN`;
 * - a lone UTF-16 surrogate in a string (node would write it as U+FFFD, hiding it): `\uNNNN`,
 *   but U+DC80..U+DCFF, which stand for a byte that is not UTF-8 (shared/byte-names), as that
 *   byte, `\xNN`, exactly as from a Buffer.
 *
 * One helper for everything the launcher prints that a session could have named.
 */

import { byteEscape, escapedByte, nameFromBytes } from './byte-names.js';

const named: Record<number, string> = {
  0x07: '\\a',
  0x08: '\\b',
  0x09: '\\t',
  0x0a: '\\n',
  0x0b: '\\v',
  0x0c: '\\f',
  0x0d: '\\r',
  0x1b: '\\e',
  0x5c: '\\\\',
};

const hex4 = (n: number) => n.toString(16).padStart(4, '0');

/** True for a code point that must not reach a terminal as it is. */
function unsafe(cp: number): boolean {
  if (cp < 0x20 || cp === 0x7f || (cp >= 0x80 && cp <= 0x9f)) return true;
  if (cp === 0x061c || cp === 0x200e || cp === 0x200f || cp === 0x2028 || cp === 0x2029) return true;
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || (cp >= 0xd800 && cp <= 0xdfff);
}

function escapeCodePoint(cp: number): string {
  if (named[cp] !== undefined) return named[cp]!;
  const byte = escapedByte(cp);
  if (byte !== undefined) return byteEscape(byte);
  if (cp < 0x80) return byteEscape(cp);
  return `\\u${hex4(cp)}`;
}

/** A string (already decoded) with every unsafe code point escaped. */
function quoteString(text: string): string {
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    out += unsafe(cp) || cp === 0x5c ? escapeCodePoint(cp) : ch;
  }
  return out;
}

/** `text` as it may be printed on a terminal: controls and invalid UTF-8 escaped, nothing dropped. */
export function forTerminal(text: string | Uint8Array): string {
  return quoteString(typeof text === 'string' ? text : nameFromBytes(text));
}

/**
 * A ref or branch name as it may be printed: forTerminal, and then every code point past ASCII
 * as `\uNNNN`. A session names the refs it makes, and `mаin` with a Cyrillic а reads as `main`
 * on the terminal; ref names are ASCII in practice, so an escape is what makes a look-alike stand
 * out. (The ledger keeps the name itself.)
 */
export function refForTerminal(name: string): string {
  return forTerminal(name).replace(/[^\x00-\x7f]/gu, (ch) => `\\u${hex4(ch.codePointAt(0)!)}`);
}

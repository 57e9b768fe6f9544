/**
 * IP literals, strictly: the broker compares hosts and addresses as canonical strings, so
 * `[2001:0DB8::0:1]` and `[2001:db8::1]` are one host, and an IPv4 address hidden in an IPv6
 * one (::ffff:127.0.0.1) is seen for what it is.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Four octets from a dotted quad; no leading zeros (ambiguous: octal to some parsers). */
export function parseIPv4(text: string): number[] | undefined {
  if (!isIPv4(text)) return undefined;
  const parts = text.split('.');
  if (parts.some((p) => p.length > 1 && p.startsWith('0'))) return undefined;
  return parts.map(Number);
}

/** Sixteen bytes from an IPv6 literal (no brackets, no zone id), or undefined. */
export function parseIPv6(text: string): Uint8Array | undefined {
  if (text.includes('%') || !isIPv6(text)) return undefined;
  let head = text;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const v4 = parseIPv4(text.slice(lastColon + 1));
  if (text.slice(lastColon + 1).includes('.')) {
    if (!v4) return undefined;
    tail.push(((v4[0]! << 8) | v4[1]!), ((v4[2]! << 8) | v4[3]!));
    head = text.slice(0, lastColon + 1);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':').filter((g) => g !== '').map((g) => parseInt(g, 16)) : []);
  const l = groups(left);
  const r = [...groups(right), ...tail];
  const fill = right === undefined ? [] : new Array<number>(8 - l.length - r.length).fill(0);
  const words = right === undefined ? [...l, ...tail] : [...l, ...fill, ...r];
  if (words.length !== 8) return undefined;
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  return bytes;
}

/** RFC 5952 text of sixteen bytes: lower case, the longest run of two or more zero groups as ::. */
export function formatIPv6(bytes: Uint8Array): string {
  const words = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!);
  let best = { start: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j += 1;
    if (j - i > best.len) best = { start: i, len: j - i };
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best.len < 2) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.len).join(':')}`;
}

export type IpLiteral = { family: 4; text: string; octets: number[] } | { family: 6; text: string; bytes: Uint8Array };

/** The canonical form of an IP literal (IPv6 without brackets), or undefined when it is not one. */
export function parseIp(text: string): IpLiteral | undefined {
  const octets = parseIPv4(text);
  if (octets) return { family: 4, text: octets.join('.'), octets };
  const bytes = parseIPv6(text);
  if (bytes) return { family: 6, text: formatIPv6(bytes), bytes };
  return undefined;
}

/**
 * The IPv4 address an IPv6 one carries, where a network would deliver it to that IPv4
 * address: IPv4-mapped ::ffff:a.b.c.d and the NAT64 well-known prefix 64:ff9b::a.b.c.d.
 * (The old IPv4-compatible ::a.b.c.d is refused as a reserved range instead.)
 */
export function embeddedIPv4(bytes: Uint8Array): string | undefined {
  const zero = (from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0);
  const v4 = () => Array.from(bytes.subarray(12, 16)).join('.');
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return v4();
  const nat64 = bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12);
  return nat64 ? v4() : undefined;
}

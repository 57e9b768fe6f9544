/**
 * IP literals, strictly, as node reads them: the broker compares hosts and addresses as
 * canonical strings (node's text of the address: lower case, zeros compressed, RFC 5952), so
 * `[2001:0DB8::0:1]` and `[2001:db8::1]` are one host. A zone id (`fe80::1%eth0`) is no literal
 * of ours, and node refuses leading zeros in IPv4 (`01.2.3.4`: octal to some parsers).
 * (node's isIP is not used: its IPv6 expression takes a process ~10 ms to compile.)
 */
import { SocketAddress } from 'node:net';

export interface IpLiteral {
  family: 4 | 6;
  /** The canonical text (IPv6 without brackets). */
  text: string;
}

/**
 * node writes an IPv4-mapped or IPv4-compatible address with a dotted quad (::ffff:1.2.3.4);
 * the broker's form stays all hex (::ffff:102:304), as its log lines always had it.
 */
function allHex(text: string): string {
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (!quad) return text;
  const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
  return `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/**
 * node's SocketAddress of an IP literal, or undefined when it is not one (node's inet_pton
 * decides; the characters are looked at first only to pick the family and to keep a zone id or
 * a host name from being tried).
 */
export function socketAddressOf(text: string): SocketAddress | undefined {
  const family = /^[0-9.]+$/.test(text) ? 'ipv4' : /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/.test(text) ? 'ipv6' : undefined;
  if (family === undefined) return undefined;
  try {
    return new SocketAddress({ address: text, family });
  } catch {
    return undefined; // ERR_INVALID_ADDRESS
  }
}

/** The canonical form of an IP literal (IPv6 without brackets), or undefined when it is not one. */
export function parseIp(text: string): IpLiteral | undefined {
  const address = socketAddressOf(text);
  if (address === undefined) return undefined;
  return address.family === 'ipv4' ? { family: 4, text: address.address } : { family: 6, text: allHex(address.address) };
}

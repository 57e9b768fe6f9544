/**
 * IP literals, strictly, as node reads them: the broker compares hosts and addresses as
 * canonical strings (node's text of the address: lower case, zeros compressed, RFC 5952), so
 * `[2001:0DB8::0:1]` and `[2001:db8::1]` are one host. A zone id (`fe80::1%eth0`) is no literal
 * of ours, and node already refuses leading zeros in IPv4 (`01.2.3.4`: octal to some parsers).
 */
import { SocketAddress, isIP } from 'node:net';

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

/** The canonical form of an IP literal (IPv6 without brackets), or undefined when it is not one. */
export function parseIp(text: string): IpLiteral | undefined {
  const family = text.includes('%') ? 0 : isIP(text);
  if (family === 4) return { family, text: new SocketAddress({ address: text, family: 'ipv4' }).address };
  if (family === 6) return { family, text: allHex(new SocketAddress({ address: text, family: 'ipv6' }).address) };
  return undefined;
}

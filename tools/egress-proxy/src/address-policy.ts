/**
 * Which resolved addresses the broker refuses to dial, and why. Checked on the address
 * (after resolution, on the host), never on the name: a public name that resolves to
 * 127.0.0.1 or to the cloud metadata service is refused like the literal.
 */
import { embeddedIPv4, parseIp, type IpLiteral } from './ip.js';

/** A rule name (the X-Proxy-Error value and the log line's rule). */
export type AddressRule =
  | 'metadata-address'
  | 'loopback'
  | 'unspecified'
  | 'link-local'
  | 'private-address'
  | 'multicast'
  | 'reserved-address'
  | 'host-address'
  | 'host-network'
  | 'bad-address';

/** In this order: the first that matches names the refusal (metadata before link-local). */
const ranges: [AddressRule, string[]][] = [
  ['metadata-address', ['169.254.169.254/32', '100.100.100.200/32', 'fd00:ec2::254/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  // RFC 1918, CGNAT (100.64/10), ULA (fc00::/7), the old site-local fec0::/10, local-use NAT64.
  ['private-address', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7', 'fec0::/10', '64:ff9b:1::/48']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  // 240/4 with the broadcast address; ::/96 (IPv4-compatible, deprecated) and the discard prefix.
  ['reserved-address', ['240.0.0.0/4', '::/96', '100::/64']],
];

interface Cidr {
  family: 4 | 6;
  bytes: Uint8Array;
  bits: number;
}

/** The address's bytes (4 or 16), from a canonical literal. */
function bytesOf(ip: IpLiteral): Uint8Array {
  return ip.family === 4 ? Uint8Array.from(ip.octets) : ip.bytes;
}

function parseCidr(text: string): Cidr | undefined {
  const [net, bits] = text.split('/');
  const ip = net === undefined ? undefined : parseIp(net.split('%')[0]!);
  const n = Number(bits);
  if (!ip || !Number.isInteger(n) || n < 0 || n > (ip.family === 4 ? 32 : 128)) return undefined;
  return { family: ip.family, bytes: bytesOf(ip), bits: n };
}

/** Byte-wise prefix comparison (a few ns; BlockList objects cost ~30 us per check here). */
function inCidr(family: 4 | 6, bytes: Uint8Array, cidr: Cidr): boolean {
  if (cidr.family !== family) return false;
  let bits = cidr.bits;
  for (let i = 0; bits > 0; i += 1, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (cidr.bytes[i]! & mask)) return false;
  }
  return true;
}

const compiled: [AddressRule, Cidr[]][] = ranges.map(([rule, cidrs]) => [rule, cidrs.map((c) => parseCidr(c)!)]);

/** One address of the host, as os.networkInterfaces() reports it (cidr may be null). */
export interface HostInterfaceAddress {
  address: string;
  family: string | number;
  cidr: string | null;
}

type ParsedHost = { ip: IpLiteral | undefined; cidr: Cidr | undefined }[];
/** Parsed once per interface list (the broker reuses one list for a second). */
const parsedHosts = new WeakMap<readonly HostInterfaceAddress[], ParsedHost>();

/** The host's own addresses and the networks its interfaces are on (a LAN router is refused too). */
function hostRule(ip: IpLiteral, bytes: Uint8Array, host: readonly HostInterfaceAddress[]): AddressRule | undefined {
  let own = parsedHosts.get(host);
  if (!own) {
    own = host.map((h) => ({ ip: parseIp(h.address.split('%')[0] ?? ''), cidr: h.cidr === null ? undefined : parseCidr(h.cidr) }));
    parsedHosts.set(host, own);
  }
  if (own.some((h) => h.ip?.text === ip.text)) return 'host-address';
  if (own.some((h) => h.cidr !== undefined && inCidr(ip.family, bytes, h.cidr))) return 'host-network';
  return undefined;
}

/**
 * Why `address` must not be dialed, or undefined when it may be. `host` is the host's
 * interface list as the caller read it for this attempt (a snapshot: a changed list is a new
 * array, as systemInterfaces gives; an interface may come up during a session).
 */
export function refuseAddress(address: string, host: readonly HostInterfaceAddress[]): AddressRule | undefined {
  const ip = parseIp(address);
  if (!ip) return 'bad-address';
  if (ip.family === 6) {
    const v4 = embeddedIPv4(ip.bytes);
    if (v4 !== undefined) {
      const inner = refuseAddress(v4, host);
      if (inner) return inner;
    }
  }
  const bytes = bytesOf(ip);
  for (const [rule, cidrs] of compiled) if (cidrs.some((c) => inCidr(ip.family, bytes, c))) return rule;
  return hostRule(ip, bytes, host);
}

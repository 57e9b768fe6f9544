/**
 * Which resolved addresses the broker refuses to dial, and why. Checked on the address
 * (after resolution, on the host), never on the name: a public name that resolves to
 * 127.0.0.1 or to the cloud metadata service is refused like the literal. Each rule is a
 * node BlockList; node matches an IPv4-mapped IPv6 address (::ffff:a.b.c.d) against the IPv4
 * ranges itself, and each IPv4 range is also entered in the NAT64 well-known prefix
 * (64:ff9b::a.b.c.d), where a network would deliver it to that IPv4 address too.
 */
import { BlockList } from 'node:net';
import { parseIp, socketAddressOf } from './ip.js';

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

/** Adds a range (`a.b.c.d/n`, `x::/n`), and for an IPv4 one the same range inside NAT64's 64:ff9b::/96. */
function addRange(list: BlockList, cidr: string): void {
  const [address, bits] = cidr.split('/') as [string, string];
  const ip = parseIp(address.split('%')[0]!);
  const prefix = Number(bits);
  if (!ip || !Number.isInteger(prefix) || prefix < 0 || prefix > (ip.family === 4 ? 32 : 128)) return;
  list.addSubnet(ip.text, prefix, ip.family === 4 ? 'ipv4' : 'ipv6');
  if (ip.family === 4) list.addSubnet(`64:ff9b::${ip.text}`, 96 + prefix, 'ipv6');
}

/** Adds one address, and for an IPv4 one its NAT64 form. */
function addAddress(list: BlockList, text: string): void {
  const ip = parseIp(text.split('%')[0]!);
  if (!ip) return;
  list.addAddress(ip.text, ip.family === 4 ? 'ipv4' : 'ipv6');
  if (ip.family === 4) list.addAddress(`64:ff9b::${ip.text}`, 'ipv6');
}

function blockList(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) addRange(list, cidr);
  return list;
}

const rules: [AddressRule, BlockList][] = ranges.map(([rule, cidrs]) => [rule, blockList(cidrs)]);

/** One address of the host, as os.networkInterfaces() reports it (cidr may be null). */
export interface HostInterfaceAddress {
  address: string;
  family: string | number;
  cidr: string | null;
}

/** Built once per interface list (the broker reuses one list for a second). */
const hostRules = new WeakMap<readonly HostInterfaceAddress[], [AddressRule, BlockList][]>();

/** The host's own addresses and the networks its interfaces are on (a LAN router is refused too). */
function rulesOfHost(host: readonly HostInterfaceAddress[]): [AddressRule, BlockList][] {
  let own = hostRules.get(host);
  if (!own) {
    const addresses = new BlockList();
    for (const h of host) addAddress(addresses, h.address);
    own = [
      ['host-address', addresses],
      ['host-network', blockList(host.flatMap((h) => (h.cidr === null ? [] : [h.cidr])))],
    ];
    hostRules.set(host, own);
  }
  return own;
}

/**
 * Why `address` must not be dialed, or undefined when it may be. `host` is the host's
 * interface list as the caller read it for this attempt (a snapshot: a changed list is a new
 * array, as systemInterfaces gives; an interface may come up during a session).
 */
export function refuseAddress(address: string, host: readonly HostInterfaceAddress[]): AddressRule | undefined {
  const socketAddress = socketAddressOf(address);
  if (socketAddress === undefined) return 'bad-address';
  for (const [rule, list] of [...rules, ...rulesOfHost(host)]) if (list.check(socketAddress)) return rule;
  return undefined;
}

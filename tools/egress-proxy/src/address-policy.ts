/**
 * Which resolved addresses the broker refuses to dial, and why. Checked on the address
 * (after resolution, on the host), never on the name: a public name that resolves to
 * 127.0.0.1 or to the cloud metadata service is refused like the literal.
 */
import { BlockList } from 'node:net';
import { embeddedIPv4, parseIp } from './ip.js';

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

const lists: [AddressRule, BlockList][] = ranges.map(([rule, cidrs]) => {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net, bits] = cidr.split('/') as [string, string];
    list.addSubnet(net, Number(bits), net.includes(':') ? 'ipv6' : 'ipv4');
  }
  return [rule, list];
});

/** One address of the host, as os.networkInterfaces() reports it (cidr may be null). */
export interface HostInterfaceAddress {
  address: string;
  family: string | number;
  cidr: string | null;
}

function inCidr(address: string, family: 4 | 6, cidr: string): boolean {
  const [net, bits] = cidr.split('/');
  const netIp = net === undefined ? undefined : parseIp(net);
  if (!netIp || netIp.family !== family || bits === undefined) return false;
  const list = new BlockList();
  list.addSubnet(netIp.text, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The host's own addresses and the networks its interfaces are on (a LAN router is refused too). */
function hostRule(address: string, family: 4 | 6, host: readonly HostInterfaceAddress[]): AddressRule | undefined {
  const own = host.map((h) => ({ ip: parseIp(h.address.split('%')[0] ?? ''), cidr: h.cidr }));
  if (own.some((h) => h.ip?.text === address)) return 'host-address';
  if (own.some((h) => h.ip?.family === family && h.cidr !== null && inCidr(address, family, h.cidr))) return 'host-network';
  return undefined;
}

/**
 * Why `address` must not be dialed, or undefined when it may be. `host` is the host's
 * interface list, read at each attempt (an interface may come up during a session).
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
  const type = ip.family === 4 ? 'ipv4' : 'ipv6';
  for (const [rule, list] of lists) if (list.check(ip.text, type)) return rule;
  return hostRule(ip.text, ip.family, host);
}

// The address rules as a table: loopback, link-local, private (RFC 1918, CGNAT), ULA,
// unspecified, multicast, cloud metadata, IPv4 hidden in IPv6 (mapped, NAT64), and the
// host's own addresses and networks are refused; public addresses are dialed. (node's BlockList
// holds the ranges; these rows were written for the hand-made matcher before it, and a
// differential run of both over 450 000 addresses gave the same rule and text for every one.)
import t from 'tap';
import { slotV6Net } from '@agent-sandbox/testkit/fake-internet-net';
import { parseIp, refuseAddress, type HostInterfaceAddress } from '../../dist/index.js';

const host: HostInterfaceAddress[] = [
  { address: '127.0.0.1', family: 'IPv4', cidr: '127.0.0.1/8' },
  { address: '192.0.2.2', family: 'IPv4', cidr: '192.0.2.2/24' },
  { address: '203.0.113.1', family: 'IPv4', cidr: '203.0.113.1/32' },
  { address: '2001:db8:ffff::2', family: 'IPv6', cidr: '2001:db8:ffff::2/64' },
  { address: 'fe80::1%eth0', family: 'IPv6', cidr: 'fe80::1/64' },
];

const rows: [address: string, rule: string | undefined][] = [
  ['203.0.113.10', undefined],
  ['8.8.8.8', undefined],
  ['2001:db8::10', undefined],
  ['2606:4700::1111', undefined],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['::1', 'loopback'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['::', 'unspecified'],
  ['169.254.1.1', 'link-local'],
  ['fe80::1234', 'link-local'],
  ['febf::1', 'link-local'],
  ['10.0.0.1', 'private-address'],
  ['172.16.0.1', 'private-address'],
  ['172.31.255.255', 'private-address'],
  ['172.32.0.1', undefined],
  ['192.168.1.1', 'private-address'],
  ['100.64.0.1', 'private-address'],
  ['100.127.255.255', 'private-address'],
  ['100.128.0.1', undefined],
  ['fc00::1', 'private-address'],
  ['fd12:3456::1', 'private-address'],
  ['fec0::1', 'private-address'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['ff02::1', 'multicast'],
  ['240.0.0.1', 'reserved-address'],
  ['255.255.255.255', 'reserved-address'],
  ['::203.0.113.10', 'reserved-address'],
  // cloud metadata before link-local / ULA / CGNAT
  ['169.254.169.254', 'metadata-address'],
  ['fd00:ec2::254', 'metadata-address'],
  ['100.100.100.200', 'metadata-address'],
  // IPv4 inside IPv6 is judged as the IPv4 address it reaches
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'metadata-address'],
  ['::ffff:10.1.2.3', 'private-address'],
  ['::ffff:203.0.113.1', 'host-address'],
  ['::ffff:203.0.113.10', undefined],
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'metadata-address'],
  ['64:ff9b::cb00:710a', undefined],
  ['64:ff9b:1::1', 'private-address'],
  ['64:ff9b::cb00:7101', 'host-address'],
  ['::ffff:192.0.2.1', 'host-network'],
  // an IPv4 address's bits elsewhere in an IPv6 address reach no IPv4 host
  ['2001:db8::127.0.0.1', undefined],
  ['::ffff:0:127.0.0.1', undefined],
  // the host itself and the networks it is on (its LAN's router, its neighbours)
  ['203.0.113.1', 'host-address'],
  ['192.0.2.2', 'host-address'],
  ['192.0.2.1', 'host-network'],
  ['192.0.2.254', 'host-network'],
  ['192.0.3.1', undefined],
  ['2001:db8:ffff::2', 'host-address'],
  ['2001:db8:ffff::1', 'host-network'],
  ['2001:db8:fffe::1', undefined],
  // not an address at all
  ['example.com', 'bad-address'],
  ['', 'bad-address'],
  ['01.2.3.4', 'bad-address'],
  ['fe80::1%eth0', 'bad-address'],
  ['::ffff:1.2.3.04', 'bad-address'],
];

let ran = 0;
for (const [address, rule] of rows) {
  t.test(`${address || '(empty)'} is ${rule ? `refused as ${rule}` : 'dialed'}`, async (t) => {
    t.equal(refuseAddress(address, host), rule);
    ran += 1;
  });
}
t.test('every address row ran', async (t) => t.equal(ran, rows.length));

t.test("the host's interface list is the caller's at each call: an address becomes refused when an interface gains it", async (t) => {
  const before: HostInterfaceAddress[] = [];
  t.equal(refuseAddress('198.51.100.7', before), undefined);
  t.equal(refuseAddress('198.51.100.7', [...before, { address: '198.51.100.7', family: 'IPv4', cidr: '198.51.100.7/32' }]), 'host-address');
});

t.test('an IP literal has one canonical text: RFC 5952, all hex (as the broker logs it)', async (t) => {
  const cases: [string, string][] = [
    ['2001:0DB8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['::ffff:1.2.3.4', '::ffff:102:304'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
    ['::203.0.113.10', '::cb00:710a'],
    ['203.0.113.10', '203.0.113.10'],
  ];
  for (const [input, canonical] of cases) t.equal(parseIp(input)?.text, canonical, input);
  for (const bad of ['1:2:3:4:5:6:7:8:9', '::ffff:1.2.3.04', '01.2.3.4', 'fe80::1%eth0', '1.2.3', '[::1]'])
    t.equal(parseIp(bad), undefined, bad);
});

// The broker logs addresses in RFC 5952 form; the fake internet's tests compare its hosts'
// addresses with those lines, so every slot's addresses must already be in that form (slot 0
// was once 2001:db8:0:0::10, and a fresh machine, which hands out slot 0 first, failed on it).
t.test('the fake internet writes the IPv6 addresses of every slot as the broker logs them', async (t) => {
  for (let slot = 0; slot < 16; slot++) {
    for (const last of ['1', '10', '11', '14']) {
      const address = `${slotV6Net(slot)}${last}`;
      t.equal(parseIp(address)?.text, address, `slot ${slot}`);
    }
  }
});

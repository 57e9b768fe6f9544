/**
 * The API route's name server, run by api-route-host.ts (`node api-route-dns.js <config.json>`):
 * a UDP DNS server that answers A and AAAA queries for the route's names (api.openai.com,
 * api.anthropic.com) with the route's addresses, an empty answer for their other types and
 * NXDOMAIN for every other name. With it in resolv.conf, a launcher finds the real API names
 * by the system resolver (getaddrinfo) as on a user's machine, while a container, which has no
 * network and no resolv.conf, finds nothing (an /etc/hosts entry would be copied into every
 * container by podman). Prints {"event":"listening"} once bound and one line per query. Builtins only.
 *   config: {"address":"127.0.0.1","port":53,"names":{"api.openai.com":["198.51.100.10","2001:db8::10"]}}
 */
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';

export interface DnsConfig {
  address: string;
  port: number;
  names: Record<string, string[]>;
}

const typeA = 1;
const typeAAAA = 28;
const emit = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);

/** An address's bytes: 4 for IPv4, 16 for IPv6 (the literal must be valid). */
function addressBytes(address: string): Buffer {
  if (net.isIPv4(address)) return Buffer.from(address.split('.').map(Number));
  const [head = '', tail] = address.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const fill = tail === undefined ? [] : Array<string>(8 - groups(head).length - groups(tail).length).fill('0');
  const all = [...groups(head), ...fill, ...groups(tail ?? '')];
  return Buffer.from(all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

/** The question: its name (lower case), type, and where it ends; undefined when malformed. */
function question(msg: Buffer): { name: string; type: number; end: number } | undefined {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  while (at < msg.length && msg[at] !== 0) {
    const len = msg[at]!;
    if (len > 63 || at + 1 + len > msg.length) return undefined;
    labels.push(
      msg
        .subarray(at + 1, at + 1 + len)
        .toString('latin1')
        .toLowerCase(),
    );
    at += 1 + len;
  }
  if (at + 5 > msg.length) return undefined;
  return { name: labels.join('.'), type: msg.readUInt16BE(at + 1), end: at + 5 };
}

/** The answer to one query: the same id and question, our records (TTL 60), or NXDOMAIN. */
function answer(msg: Buffer, names: Record<string, string[]>): Buffer | undefined {
  const q = question(msg);
  if (!q) return undefined;
  const known = names[q.name];
  const want = q.type === typeA ? 4 : q.type === typeAAAA ? 16 : 0;
  const records = (known ?? []).map(addressBytes).filter((b) => b.length === want);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(msg.readUInt16BE(0), 0);
  // QR, the query's opcode and RD, AA and RA; rcode 3 (NXDOMAIN) for a name we do not hold.
  header.writeUInt16BE(0x8000 | (msg.readUInt16BE(2) & 0x7900) | 0x0400 | 0x0080 | (known ? 0 : 3), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  const rrs = records.map((rdata) => {
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    rr.writeUInt16BE(q.type, 2);
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(60, 6);
    rr.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([rr, rdata]);
  });
  return Buffer.concat([header, msg.subarray(12, q.end), ...rrs]);
}

async function main(): Promise<void> {
  const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as DnsConfig;
  const names = Object.fromEntries(Object.entries(config.names).map(([n, a]) => [n.toLowerCase(), a]));
  const socket = dgram.createSocket(net.isIPv6(config.address) ? 'udp6' : 'udp4');
  socket.on('message', (msg, from) => {
    const reply = answer(msg, names);
    const q = question(msg);
    emit({ event: 'query', name: q?.name ?? null, type: q?.type ?? null, known: q ? q.name in names : false });
    if (reply) socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(config.port, config.address, () => resolve());
  });
  emit({ event: 'listening', port: socket.address().port });
  process.once('SIGTERM', () => process.exit(0));
}

void main().catch((err: unknown) => {
  process.stderr.write(`api-route-dns: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

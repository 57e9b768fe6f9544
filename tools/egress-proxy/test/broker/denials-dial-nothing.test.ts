// Every denial is a 403 with X-Proxy-Error naming the rule, one log line, and nothing dialed.
// Where a row's target is on the public side, the fake internet's servers count no connection
// (the broker library with the fake internet's resolver). Where it is the broker's own host (its
// loopback, the metadata address, an address of its own, its private network), the broker runs in a network
// namespace of its own that has a listener at each of those targets, and each counts no
// connection; control: the same dial from there without the broker reaches every listener.
import t from 'tap';
import { startFakeInternet, tempDir } from '@agent-sandbox/testkit';
import { ask, brokerSession } from '../fixtures/broker-session.js';
import { startHostTargets } from '../fixtures/host-targets.js';

const fi = await startFakeInternet(t, { dir: await tempDir(t, 'astest-fi-') });
/** The broker's host, with listeners: the names the rows resolve, as its /etc/hosts has them. */
const host = await startHostTargets(t, fi.hostSide.v4, [
  ['loopback.test', '127.0.0.1'],
  ['metadata.test', '169.254.169.254'],
  ['hostside.test', fi.hostSide.v4],
  ['mixed.test', fi.api.v4],
  ['mixed.test', '10.0.0.1'],
]);

/** onHost: the row's target is the broker's host; `dials` is the address its line names. */
type Row = {
  label: string;
  allow: string[];
  deny?: string[];
  request: string;
  status?: number;
  rule: string;
  resolves?: string[];
  onHost?: { dials: string };
};
const connect = (target: string) => `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`;
const get = (url: string) => `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\n\r\n`;

const rows: Row[] = [
  {
    label: 'a name not on the allowlist',
    allow: ['api.openai.com'],
    request: connect('blocked.example:443'),
    rule: 'not-allowlisted',
    resolves: [],
  },
  { label: 'an allowed name on port 22', allow: ['api.openai.com'], request: connect('api.openai.com:22'), rule: 'bad-port', resolves: [] },
  {
    label: 'an allowed name on port 80 by CONNECT (443 only)',
    allow: ['api.openai.com'],
    request: connect('api.openai.com:80'),
    rule: 'bad-port',
  },
  {
    label: 'plain http to an allowed name without :80',
    allow: ['api.openai.com'],
    request: get('http://api.openai.com/'),
    rule: 'bad-port',
  },
  {
    label: 'a denylisted name that the allowlist also lists',
    allow: ['blocked.example'],
    deny: ['blocked.example'],
    request: connect('blocked.example:443'),
    rule: 'denylisted',
    resolves: [],
  },
  {
    label: '[::1]:443, even when allowlisted',
    allow: ['[::1]'],
    request: connect('[::1]:443'),
    rule: 'loopback',
    onHost: { dials: '::1' },
  },
  {
    label: '127.0.0.1:443, even when allowlisted',
    allow: ['127.0.0.1'],
    request: connect('127.0.0.1:443'),
    rule: 'loopback',
    onHost: { dials: '127.0.0.1' },
  },
  {
    label: '[::ffff:127.0.0.1]:443 (IPv4-mapped loopback)',
    allow: ['[::ffff:127.0.0.1]'],
    request: connect('[::ffff:127.0.0.1]:443'),
    rule: 'loopback',
    onHost: { dials: '::ffff:7f00:1' },
  },
  {
    label: 'a name that resolves to 127.0.0.1',
    allow: ['loopback.test'],
    request: connect('loopback.test:443'),
    rule: 'loopback',
    onHost: { dials: '127.0.0.1' },
  },
  {
    label: 'a name that resolves to 169.254.169.254',
    allow: ['metadata.test'],
    request: connect('metadata.test:443'),
    rule: 'metadata-address',
    onHost: { dials: '169.254.169.254' },
  },
  {
    label: 'the metadata service by plain http',
    allow: ['169.254.169.254:80'],
    request: get('http://169.254.169.254/latest/meta-data/'),
    rule: 'metadata-address',
    onHost: { dials: '169.254.169.254' },
  },
  {
    label: 'a name that resolves to an address of the host',
    allow: ['hostside.test'],
    request: connect('hostside.test:443'),
    rule: 'host-address',
    onHost: { dials: fi.hostSide.v4 },
  },
  {
    label: 'a name with one public and one private address',
    allow: ['mixed.test'],
    request: connect('mixed.test:443'),
    rule: 'private-address',
    onHost: { dials: '10.0.0.1' },
  },
  {
    label: 'a name that does not resolve',
    allow: ['nosuch.test'],
    request: connect('nosuch.test:443'),
    rule: 'resolve-failed',
    resolves: ['nosuch.test'],
  },
  {
    label: 'a line the broker cannot parse',
    allow: ['api.openai.com'],
    request: 'HELLO\r\n\r\n',
    status: 400,
    rule: 'bad-request',
    resolves: [],
  },
  {
    label: 'a request in origin form',
    allow: ['api.openai.com'],
    request: 'GET / HTTP/1.1\r\nHost: api.openai.com\r\n\r\n',
    status: 400,
    rule: 'bad-request',
  },
];

t.test("control: from the broker's host, a plain dial (no broker) reaches every target's listener", async (t) => {
  const before = await host.connections();
  const dials = [...host.targets.map((g) => [g.address, g.port] as const), ['::ffff:127.0.0.1', 443] as const];
  for (const [address, port] of dials) t.equal(await host.dial(address, port), 'connected', `${address}:${port} answers`);
  const after = await host.connections();
  const expected = Object.fromEntries(Object.entries(before).map(([k, n]) => [k, n + (k === 'loopback:443' ? 2 : 1)]));
  t.same(after, expected, 'each listener counted its dial (the IPv4-mapped one at 127.0.0.1)');
});

let ran = 0;
for (const row of rows) {
  t.test(`${row.label}: ${row.status ?? 403} ${row.rule}, one line, no server reached`, async (t) => {
    const calls = fi.resolveCalls.length;
    const before = { api: await fi.connections('api'), blocked: await fi.connections('blocked'), host: await host.connections() };
    const config = { allow: row.allow, ...(row.deny ? { deny: row.deny } : {}) };
    const session = row.onHost ? await host.broker(t, config) : await brokerSession(t, config, { fi });
    const reply = await ask(session.socketPath, row.request);
    t.equal(reply.status, row.status ?? 403);
    t.equal(reply.headers['x-proxy-error'], row.rule);
    t.match(reply.body, new RegExp(`^${row.rule}: `));
    const lines = 'broker' in session ? (await session.broker.stop(), session.lines) : await session.stop();
    t.equal(lines.length, 1, 'exactly one line');
    t.match(lines[0], { decision: 'denied', rule: row.rule, status: row.status ?? 403, bytesUp: 0, bytesDown: 0 });
    if (row.onHost) t.equal(lines[0]?.address, row.onHost.dials, `refused on the address ${row.onHost.dials}, after resolving`);
    const after = { api: await fi.connections('api'), blocked: await fi.connections('blocked'), host: await host.connections() };
    t.same(
      after,
      before,
      "no server counted a connection: the fake internet's, nor the listeners at the broker host's loopback, metadata and own addresses",
    );
    if (row.resolves) t.same(fi.resolveCalls.slice(calls), row.resolves, 'names resolved');
    ran += 1;
  });
}
t.test('every denial row ran', async (t) => t.equal(ran, rows.length));

t.test('a name resolved to a public address and then to 127.0.0.1 is resolved once and dialed at the address checked', async (t) => {
  let calls = 0;
  const rebinding = () => async (name: string) => ((calls += 1) === 1 ? fi.resolve(name) : ['127.0.0.1']);
  const before = await fi.connections('api', 443);
  const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com'] }, { fi, resolve: rebinding });
  const socket = await (await import('../fixtures/broker-session.js')).connectBroker(socketPath);
  socket.write('CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n');
  await new Promise((resolve) => socket.once('data', resolve));
  socket.destroy();
  await broker.stop();
  t.equal(calls, 1, 'the resolver was asked once');
  t.equal(await fi.connections('api', 443), before + 1, 'the server at the checked address was reached');
  t.match(lines, [{ decision: 'allowed', address: fi.api.v4 }]);
});

t.test('more attempts than maxConnections at once: the extra one gets 503 too-many-connections and its own line', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com'], maxConnections: 1 }, { fi });
  const { connectBroker } = await import('../fixtures/broker-session.js');
  const holder = await connectBroker(socketPath); // sends nothing: an open attempt
  await new Promise((r) => setTimeout(r, 50));
  const reply = await ask(socketPath, 'CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n');
  t.equal(reply.status, 503);
  t.equal(reply.headers['x-proxy-error'], 'too-many-connections');
  holder.destroy();
  await broker.stop();
  t.same(lines.map((l) => l.rule).sort(), ['bad-request', 'too-many-connections']);
});

// From inside a real session container (the real image, podman --network none through
// sandbox-run, the broker's socket mounted, the image's relay on 127.0.0.1:3128): the
// allowed name works for HTTPS and a websocket upgrade; everything else is denied by the
// broker or has no route at all; the log has exactly one line per attempt through the relay.
import t from 'tap';
import net from 'node:net';
import { imageExists, sessionImage, startFakeInternet, tempDir } from '@agent-sandbox/testkit';
import { brokerSession } from '../fixtures/broker-session.js';
import { runProbes, type Probe } from '../fixtures/session-container.js';

if (!(await imageExists(sessionImage))) throw new Error(`${sessionImage} is missing: run image/build-all.sh`);

const fi = await startFakeInternet(t, { dir: await tempDir(t, 'astest-fi-') });
// The address rules, not the name rules, must refuse these: so the names are allowlisted.
const allow = [
  'api.openai.com',
  'api.openai.com:80',
  '[::1]',
  'loopback.test',
  'metadata.test',
  'hostside.test',
  'mixed.test',
  '[::ffff:169.254.169.254]',
];
const session = await brokerSession(t, { allow, socketOwner: { uid: 1000, gid: 1000 } }, { fi });

type Expect = { line?: { host: string; port: number; decision: string; rule: string } };
const probes: (Probe & Expect)[] = [
  {
    label: 'https-allowed',
    kind: 'https',
    host: 'api.openai.com',
    path: '/v1/responses',
    line: { host: 'api.openai.com', port: 443, decision: 'allowed', rule: 'allowlisted' },
  },
  {
    label: 'websocket-allowed',
    kind: 'websocket',
    host: 'api.openai.com',
    line: { host: 'api.openai.com', port: 443, decision: 'allowed', rule: 'allowlisted' },
  },
  {
    label: 'http-allowed',
    kind: 'http',
    url: 'http://api.openai.com/v1/ping',
    line: { host: 'api.openai.com', port: 80, decision: 'allowed', rule: 'allowlisted' },
  },
  {
    label: 'https-blocked',
    kind: 'https',
    host: 'blocked.example',
    line: { host: 'blocked.example', port: 443, decision: 'denied', rule: 'not-allowlisted' },
  },
  {
    label: 'port-22',
    kind: 'connect',
    target: 'api.openai.com:22',
    line: { host: 'api.openai.com', port: 22, decision: 'denied', rule: 'bad-port' },
  },
  { label: 'v6-loopback', kind: 'connect', target: '[::1]:443', line: { host: '[::1]', port: 443, decision: 'denied', rule: 'loopback' } },
  {
    label: 'name-to-127',
    kind: 'connect',
    target: 'loopback.test:443',
    line: { host: 'loopback.test', port: 443, decision: 'denied', rule: 'loopback' },
  },
  {
    label: 'name-to-metadata',
    kind: 'connect',
    target: 'metadata.test:443',
    line: { host: 'metadata.test', port: 443, decision: 'denied', rule: 'metadata-address' },
  },
  {
    label: 'mapped-metadata',
    kind: 'connect',
    target: '[::ffff:169.254.169.254]:443',
    line: { host: '[::ffff:a9fe:a9fe]', port: 443, decision: 'denied', rule: 'metadata-address' },
  },
  {
    label: 'name-to-host',
    kind: 'connect',
    target: 'hostside.test:443',
    line: { host: 'hostside.test', port: 443, decision: 'denied', rule: 'host-address' },
  },
  {
    label: 'name-to-mixed',
    kind: 'connect',
    target: 'mixed.test:443',
    line: { host: 'mixed.test', port: 443, decision: 'denied', rule: 'private-address' },
  },
  {
    label: 'nested-connect',
    kind: 'nested',
    outer: 'api.openai.com:443',
    inner: 'blocked.example:443',
    line: { host: 'api.openai.com', port: 443, decision: 'allowed', rule: 'allowlisted' },
  },
  {
    label: 'nested-connect-in-tls',
    kind: 'nested',
    tls: true,
    outer: 'api.openai.com:443',
    inner: 'blocked.example:443',
    line: { host: 'api.openai.com', port: 443, decision: 'allowed', rule: 'allowlisted' },
  },
  // no broker: straight at the fake internet's addresses, and DNS
  { label: 'direct-v4', kind: 'tcp', host: fi.api.v4, port: 443 },
  { label: 'direct-v6', kind: 'tcp', host: fi.api.v6, port: 443 },
  { label: 'raw-tcp-22', kind: 'tcp', host: fi.api.v4, port: 22 },
  { label: 'udp-53-v4', kind: 'udp', host: fi.hostSide.v4, port: 53 },
  { label: 'udp-53-v6', kind: 'udp', host: fi.hostSide.v6, port: 53 },
  { label: 'dns', kind: 'dns', name: 'api.openai.com' },
  { label: 'interfaces', kind: 'interfaces' },
];

const before = { api: await fi.connections('api'), blocked: await fi.connections('blocked') };
const run = await runProbes(t, {
  socketDir: session.dir,
  caFile: fi.ca.certFile,
  probes: probes.map(({ line: _line, ...p }) => p),
  label: 'egress-proof',
});
await session.broker.idle();
const result = (label: string) => run.results.get(label) ?? t.fail(`no result for ${label}: ${run.stderr}`);

t.test('the container ran with --network=none and the socket directory read-only, and every probe reported', async (t) => {
  t.equal(run.exitCode, 0, run.stderr);
  t.ok(run.argv.includes('--network=none'));
  t.ok(run.argv.some((a) => a.includes('destination=/run/sandbox-egress,ro=true')));
  t.equal(run.results.size, probes.length, run.stdout);
});

t.test('the allowed name works through the relay: HTTPS with its real certificate, a websocket upgrade, plain http', async (t) => {
  t.match(result('https-allowed'), { ok: true, status: 200, body: { server: 'api', path: '/v1/responses', host: 'api.openai.com' } });
  t.match(result('websocket-allowed'), { ok: true, status: 101, acceptMatches: true, echo: 'echo:hello through the broker' });
  t.match(result('http-allowed'), { ok: true, status: 200, body: { server: 'api', path: '/v1/ping', host: 'api.openai.com' } });
});

t.test('the name that is not allowed gets 403 not-allowlisted and its server counts 0 connections', async (t) => {
  t.match(result('https-blocked'), { ok: false, status: 403, proxyError: 'not-allowlisted' });
  t.equal(await fi.connections('blocked'), before.blocked);
});

for (const [label, rule] of [
  ['port-22', 'bad-port'],
  ['v6-loopback', 'loopback'],
  ['name-to-127', 'loopback'],
  ['name-to-metadata', 'metadata-address'],
  ['mapped-metadata', 'metadata-address'],
  ['name-to-host', 'host-address'],
  ['name-to-mixed', 'private-address'],
] as const) {
  t.test(`${label} is denied: 403 ${rule}`, async (t) => t.match(result(label), { ok: false, status: 403, proxyError: rule }));
}

t.test('a CONNECT nested in a CONNECT reaches nothing the outer one did not allow', async (t) => {
  t.match(result('nested-connect'), { ok: false, outerStatus: 200 });
  t.match(result('nested-connect-in-tls'), { ok: false, outerStatus: 200, innerReply: /^HTTP\/1\.1 405/ });
  const inner = (await fi.events()).filter((e) => e.event === 'connect-request');
  t.match(inner, [{ server: 'api', target: 'blocked.example:443' }], 'the allowed server got the inner CONNECT as bytes');
  t.equal(await fi.connections('blocked'), before.blocked, 'blocked.example was never reached');
});

t.test('direct IPv4 and IPv6, raw TCP and UDP 53 have no route; DNS does not resolve; the only interface is lo', async (t) => {
  for (const label of ['direct-v4', 'direct-v6', 'raw-tcp-22', 'udp-53-v4', 'udp-53-v6'])
    t.match(result(label), { ok: false, code: 'ENETUNREACH' }, label);
  t.match(result('dns'), { ok: false, code: /^(EAI_AGAIN|ENOTFOUND)$/ });
  t.same(result('interfaces'), { probe: 'interfaces', ok: true, names: ['lo'] });
});

t.test('those same addresses answer from the host: the failures inside are the container, not the fake internet', async (t) => {
  const reached = await fi.connections('api', 443);
  for (const host of [fi.api.v4, fi.api.v6]) {
    const socket = net.connect({ host, port: 443 });
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.destroy();
  }
  t.equal(await fi.connections('api', 443), reached + 2);
});

t.test('the log has exactly one line per attempt through the relay, each with its rule', async (t) => {
  // The last test: stopping ends the interval in which refusals are aggregated (attempt-log.ts), so every line is written.
  const summary = await session.broker.stop();
  const expected = probes.flatMap((p) => (p.line ? [p.line] : []));
  const key = (l: { host: string | null; port: number | null; decision: string; rule: string }) =>
    `${l.host}:${l.port} ${l.decision} ${l.rule}`;
  t.same(session.lines.map(key).sort(), expected.map(key).sort());
  t.ok(session.lines.every((l) => l.session === 'astest-egress'));
  const allowed = session.lines.filter((l) => l.decision === 'allowed');
  t.ok(
    allowed.every((l) => l.bytesUp > 0 && l.address === fi.api.v4),
    'allowed lines carry the bytes sent and the address dialed',
  );
  // The TLS server closes on the raw inner CONNECT without a word: those bytes were all it got.
  const rawInner = Buffer.byteLength('CONNECT blocked.example:443 HTTP/1.1\r\nHost: blocked.example:443\r\n\r\n');
  t.same(
    allowed.filter((l) => l.bytesDown === 0).map((l) => l.bytesUp),
    [rawInner],
    'every other allowed attempt got bytes back',
  );
  t.equal(
    (await fi.connections('api')) - before.api - 2,
    allowed.length,
    'one server connection per allowed attempt (plus the 2 from the host)',
  );
  t.match(summary, { attempts: expected.length, allowed: allowed.length, denied: expected.length - allowed.length, failed: 0 });
  t.match(
    summary.reached,
    [
      { host: 'api.openai.com', port: 443, connections: 4 },
      { host: 'api.openai.com', port: 80, connections: 1 },
    ],
    'the most connections first',
  );
});

// The only bytes the broker parses: the first request head. CONNECT targets (IPv6 literals
// included) and absolute-URI requests are understood; the upstream gets origin form, the URI's
// Host and no proxy headers; everything else is a bad request.
import t from 'tap';
import { maxHeadBytes, parseHead } from '../../dist/index.js';

const head = (text: string) => parseHead(Buffer.from(text, 'latin1'));

t.test('CONNECT host:port names the target; bytes after the head are kept for the upstream, unparsed', async (t) => {
  const parsed = head(
    'CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n\x16\x03\x01CONNECT inner:443 HTTP/1.1\r\n\r\n',
  );
  t.equal(parsed.kind, 'connect');
  if (parsed.kind !== 'connect') return;
  t.same({ host: parsed.target.host.text, port: parsed.target.port }, { host: 'api.openai.com', port: 443 });
  t.equal(parsed.rest.toString('latin1'), '\x16\x03\x01CONNECT inner:443 HTTP/1.1\r\n\r\n');
});

t.test('CONNECT [IPv6]:port parses the literal; without a port it is 443', async (t) => {
  const v6 = head('CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n');
  t.same(v6.kind === 'connect' && { kind: v6.target.host.kind, host: v6.target.host.text, port: v6.target.port }, {
    kind: 'ipv6',
    host: '2001:db8::1',
    port: 8443,
  });
  const noPort = head('CONNECT api.openai.com HTTP/1.1\r\n\r\n');
  t.same(noPort.kind === 'connect' && noPort.target.port, 443);
});

t.test('an incomplete head waits for more bytes; an endless one is refused', async (t) => {
  t.equal(head('CONNECT api.openai.com:443 HTTP/1.1\r\nHost: x').kind, 'incomplete');
  t.equal(parseHead(Buffer.alloc(maxHeadBytes, 0x61)).kind, 'invalid');
});

t.test('an absolute-URI request is rewritten to origin form with the URI as Host and Connection: close', async (t) => {
  const parsed = head(
    'POST http://API.openai.com/v1/x?y=1#frag HTTP/1.1\r\nHost: evil.example\r\nProxy-Connection: keep-alive\r\n' +
      'Proxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\nContent-Length: 4\r\nX-Custom: a b\r\n\r\nbody',
  );
  t.equal(parsed.kind, 'http');
  if (parsed.kind !== 'http') return;
  t.same(
    { host: parsed.target.host.text, port: parsed.target.port, method: parsed.method },
    { host: 'api.openai.com', port: 80, method: 'POST' },
  );
  t.equal(
    parsed.head.toString('latin1'),
    'POST /v1/x?y=1 HTTP/1.1\r\nHost: API.openai.com\r\nContent-Length: 4\r\nX-Custom: a b\r\nConnection: close\r\n\r\n',
  );
  t.equal(parsed.rest.toString(), 'body');
});

t.test('an absolute URI keeps its port, and an upgrade keeps its Connection header', async (t) => {
  const parsed = head('GET http://[2001:db8::1]:8080 HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  t.equal(parsed.kind, 'http');
  if (parsed.kind !== 'http') return;
  t.same({ host: parsed.target.host.text, port: parsed.target.port }, { host: '2001:db8::1', port: 8080 });
  t.equal(
    parsed.head.toString('latin1'),
    'GET / HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
  );
});

const invalid: [string, string][] = [
  ['garbage', 'hello\r\n\r\n'],
  ['origin form (not a proxy request)', 'GET / HTTP/1.1\r\nHost: api.openai.com\r\n\r\n'],
  ['an https:// absolute URI (no TLS origination)', 'GET https://api.openai.com/ HTTP/1.1\r\n\r\n'],
  ['userinfo in the URI', 'GET http://user@api.openai.com/ HTTP/1.1\r\n\r\n'],
  ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ['HTTP/1.2', 'CONNECT a.example:443 HTTP/1.2\r\n\r\n'],
  ['lower-case method', 'connect a.example:443 HTTP/1.1\r\n\r\n'],
  ['CONNECT without a target', 'CONNECT  HTTP/1.1\r\n\r\n'],
  ['CONNECT to an unbracketed IPv6 literal', 'CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n'],
  ['CONNECT to port 0', 'CONNECT a.example:0 HTTP/1.1\r\n\r\n'],
  ['CONNECT to a URL', 'CONNECT http://a.example/ HTTP/1.1\r\n\r\n'],
  ['a folded header line', 'CONNECT a.example:443 HTTP/1.1\r\nX: a\r\n b\r\n\r\n'],
  ['a header without a colon', 'CONNECT a.example:443 HTTP/1.1\r\nnot a header\r\n\r\n'],
  ['a TLS ClientHello sent to the proxy', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n'],
];
for (const [what, text] of invalid) {
  t.test(`${what} is a bad request`, async (t) => t.equal(head(text).kind, 'invalid'));
}

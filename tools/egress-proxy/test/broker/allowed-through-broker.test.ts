// What is allowed gets through, byte for byte, with no TLS interception: HTTPS under the real
// name (the client verifies the server's certificate against the test CA), a websocket
// upgrade, IPv6 literals, plain http by absolute URI. And a CONNECT inside a CONNECT is only
// bytes to the upstream the outer one allowed.
import t from 'tap';
import tls from 'node:tls';
import { createHash, randomBytes } from 'node:crypto';
import { startFakeInternet, tempDir } from '@agent-sandbox/testkit';
import { ask, brokerSession, connectBroker, httpsVia, readHead, readToEnd } from '../fixtures/broker-session.js';

const fi = await startFakeInternet(t, { dir: await tempDir(t, 'astest-fi-') });

t.test('HTTPS to an allowed name: the client sees the real server certificate and the reply; one line with bytes both ways', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com'] }, { fi });
  const before = await fi.connections('api', 443);
  const reply = await httpsVia(socketPath, 'api.openai.com:443', 'api.openai.com', fi.ca.certPem, '/v1/models');
  t.equal(reply.status, 200);
  t.match(JSON.parse(reply.body), { server: 'api', path: '/v1/models', host: 'api.openai.com' });
  await broker.stop();
  t.equal(await fi.connections('api', 443), before + 1);
  t.equal(lines.length, 1);
  t.match(lines[0], {
    method: 'CONNECT',
    host: 'api.openai.com',
    port: 443,
    address: fi.api.v4,
    decision: 'allowed',
    rule: 'allowlisted',
    entry: 'api.openai.com',
    status: 200,
  });
  t.ok(lines[0]!.bytesUp > 200 && lines[0]!.bytesDown > 500, `bytes up ${lines[0]!.bytesUp}, down ${lines[0]!.bytesDown}`);
});

t.test('the TLS session is end to end: a client that does not trust the test CA refuses the server', async (t) => {
  const { socketPath } = await brokerSession(t, { allow: ['api.openai.com'] }, { fi });
  await t.rejects(httpsVia(socketPath, 'api.openai.com:443', 'api.openai.com', tls.rootCertificates.join('\n')), {
    code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  });
});

t.test('a websocket upgrade through the tunnel: 101 with the right accept key, and a frame echoed', async (t) => {
  const { socketPath, broker, lines } = await brokerSession(t, { allow: ['api.openai.com'] }, { fi });
  const socket = await connectBroker(socketPath);
  socket.write('CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n');
  t.equal((await readHead(socket)).status, 200);
  const secure = tls.connect({ socket, servername: 'api.openai.com', ca: fi.ca.certPem });
  await new Promise((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
  const key = randomBytes(16).toString('base64');
  secure.write(
    `GET /v1/realtime HTTP/1.1\r\nHost: api.openai.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  const reply = await readHead(secure);
  t.equal(reply.status, 101);
  t.equal(reply.headers['sec-websocket-accept'], createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64'));
  const text = Buffer.from('ping');
  const mask = randomBytes(4);
  secure.write(Buffer.concat([Buffer.from([0x81, 0x80 | text.length]), mask, Buffer.from(text.map((b, i) => b ^ mask[i % 4]!))]));
  const frame = Buffer.from(await readToEnd(secure, reply.rest), 'latin1');
  t.equal(frame.subarray(2).toString(), 'echo:ping');
  await broker.stop();
  t.match((await fi.events()).filter((e) => e.event === 'websocket').pop(), { server: 'api', port: 443, path: '/v1/realtime' });
  t.equal(lines.length, 1);
});

t.test('CONNECT to an allowlisted IPv6 literal dials it over IPv6', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: [`[${fi.api.v6}]`] }, { fi });
  const reply = await httpsVia(socketPath, `[${fi.api.v6}]:443`, 'api.openai.com', fi.ca.certPem);
  t.equal(reply.status, 200);
  await broker.stop();
  t.match(lines, [{ host: `[${fi.api.v6}]`, port: 443, address: fi.api.v6, decision: 'allowed' }]);
  const last = (await fi.events()).filter((e) => e.event === 'connection' && e.server === 'api').pop();
  t.match(last, { port: 443, family: 6 });
});

t.test('plain http by absolute URI: origin form upstream, Host from the URI (not the client), the reply relayed', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com:80'] }, { fi });
  const reply = await ask(
    socketPath,
    'GET http://api.openai.com/v1/ping?x=1 HTTP/1.1\r\nHost: other-site.example\r\nProxy-Connection: keep-alive\r\n\r\n',
  );
  t.equal(reply.status, 200);
  t.match(JSON.parse(reply.body), { server: 'api', path: '/v1/ping?x=1', host: 'api.openai.com' });
  await broker.stop();
  t.match(lines, [{ method: 'GET', host: 'api.openai.com', port: 80, decision: 'allowed', status: null }]);
});

for (const inTls of [false, true]) {
  t.test(
    `a CONNECT nested in a CONNECT${inTls ? ' (inside the TLS session)' : ''} reaches only the outer upstream: the inner host counts 0`,
    async (t) => {
      const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com'] }, { fi });
      const before = { api: await fi.connections('api'), blocked: await fi.connections('blocked') };
      const socket = await connectBroker(socketPath);
      socket.write('CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n');
      const outer = await readHead(socket);
      t.equal(outer.status, 200);
      const channel = inTls ? tls.connect({ socket, servername: 'api.openai.com', ca: fi.ca.certPem }) : socket;
      if (inTls) await new Promise((resolve, reject) => channel.once('secureConnect', resolve).once('error', reject));
      channel.write(`CONNECT blocked.example:443 HTTP/1.1\r\nHost: blocked.example:443\r\n\r\n`);
      const inner = await readToEnd(channel);
      t.notMatch(inner, /^HTTP\/1\.1 200/, 'no tunnel inside the tunnel');
      if (inTls) t.match(inner, /^HTTP\/1\.1 405/, 'the allowed server itself answered the inner CONNECT');
      await broker.stop();
      t.equal(await fi.connections('blocked'), before.blocked, 'blocked.example was never reached');
      t.equal(await fi.connections('api'), before.api + 1, 'only the outer upstream was dialed');
      const events = await fi.events();
      if (inTls) t.match(events.filter((e) => e.event === 'connect-request').pop(), { server: 'api', target: 'blocked.example:443' });
      t.equal(lines.length, 1, 'one attempt, one line: the broker never parsed the tunnel');
      t.match(lines[0], { host: 'api.openai.com', decision: 'allowed' });
    },
  );
}

t.test('streamed bytes arrive complete and are counted in the line', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com:80'] }, { fi });
  const size = 8 * 1024 * 1024;
  const reply = await ask(socketPath, `GET http://api.openai.com/stream?bytes=${size} HTTP/1.1\r\n\r\n`);
  t.equal(reply.status, 200);
  t.equal(reply.body.length, size);
  await broker.stop();
  t.ok(lines[0]!.bytesDown > size && lines[0]!.bytesDown < size + 1024, `bytesDown ${lines[0]!.bytesDown}`);
});

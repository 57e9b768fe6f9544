// The API route (api-route-host.ts), opened here as the VM tier's guest opens it for uid 1000,
// with its name server on a free port (this host's resolv.conf is not ours to change): the
// names resolve to the route's addresses and nothing else resolves; a TLS client trusting the
// test CA reaches a model server on the user's socket as api.openai.com at either address,
// through the relay; the socket's directory takes that user's listener and nobody else's; a
// connection while nothing listens is closed; stop() leaves nothing behind.
import t from 'tap';
import { Resolver } from 'node:dns/promises';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { findApiRoute, makeTestCa, openApiRoute, startSocketModelServer, tempDir, type OpenApiRoute } from '../dist/index.js';

const rootOnly = { skip: process.getuid?.() === 0 ? false : 'needs root (a network namespace and a veth pair)' };
const names = ['api.openai.com', 'api.anthropic.com'];

/** One POST to the route's address as `name`, over TLS trusting `ca`: the status and body. */
function post(address: string, name: string, ca: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: address,
        port: 443,
        servername: name,
        ca,
        method: 'POST',
        path: '/v1/responses',
        headers: { host: name, authorization: 'Bearer sk-route-test', 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** What a TCP client gets from the route's address when it sends a line: the bytes, or the error code. */
function exchange(address: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect(443, address, () => s.write('hello\n'));
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code}`));
    s.on('close', () => resolve(got));
    setTimeout(() => s.end(), 2000);
  });
}

/** node as `uid`, listening on `socket`: 'listening', or the error code. */
async function listenAs(uid: number, socket: string): Promise<string> {
  const script = `const s=require('net').createServer().listen(${JSON.stringify(socket)},()=>{console.log('listening');s.close()});s.on('error',(e)=>console.log(e.code))`;
  const out = await execa('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '-e', script], {
    reject: false,
    cwd: '/',
  });
  return String(out.stdout).trim();
}

t.test('the API route: the names resolve there, and its relay reaches the user socket and nothing else', rootOnly, async (t) => {
  const dir = await tempDir(t, 'astest-api-route-');
  await chmod(dir, 0o755); // uid 1000 must reach the state directory, as in the guest's /run
  const stateDir = path.join(dir, 'state');
  const route: OpenApiRoute = await openApiRoute(t, { stateDir, uid: 1000, names, dns: { address: '127.0.0.1', port: 0 } });

  const resolver = new Resolver();
  resolver.setServers([`127.0.0.1:${route.dns.port}`]);
  for (const name of names) {
    t.same(await resolver.resolve4(name), [route.v4], `${name} resolves to the route's IPv4 address`);
    t.same(
      await resolver.resolve6(name.toUpperCase()),
      [route.v6],
      `${name.toUpperCase()} resolves to its IPv6 address (names are case-blind)`,
    );
  }
  await t.rejects(resolver.resolve4('example.com'), { code: 'ENOTFOUND' }, 'any other name does not resolve');
  t.same(
    JSON.parse(readFileSync(path.join(stateDir, 'route.json'), 'utf8')),
    { names, v4: route.v4, v6: route.v6, uid: 1000, socket: route.socket, dns: route.dns },
    'route.json says what was opened',
  );
  t.equal(findApiRoute(path.join(stateDir, 'route.json')), undefined, "root finds no route of its own there (it is uid 1000's)");

  t.equal(statSync(path.dirname(route.socket)).mode & 0o777, 0o700, "the socket's directory is mode 0700");
  t.equal(statSync(path.dirname(route.socket)).uid, 1000, 'and owned by uid 1000');
  t.equal(await listenAs(1000, route.socket), 'listening', 'uid 1000 can listen on the socket');
  t.equal(await listenAs(65534, route.socket), 'EACCES', 'nobody else can (control: the same call as uid 65534)');

  t.match(await exchange(route.v4), /^(|error ECONNRESET)$/, 'with nothing on the socket, a connection is closed with no answer');

  const ca = await makeTestCa(dir, []);
  const cert = await ca.issue(names);
  const server = await startSocketModelServer(t, route.socket, {
    steps: [{ say: 'done' }],
    expectedToken: 'sk-route-test',
    dir,
    tls: { certFile: cert.certFile, keyFile: cert.keyFile },
  });
  for (const address of [route.v4, route.v6]) {
    const answer = await post(address, 'api.openai.com', ca.certPem, JSON.stringify({ input: [] }));
    t.equal(answer.status, 200, `TLS as api.openai.com at ${address}: the model server answered`);
    t.match(answer.text, /response\.completed/, 'with its scripted stream');
  }
  const requests = await server.requests();
  t.equal(requests.length, 2, 'the model server recorded both requests');
  t.ok(
    requests.every((r) => r.host === 'api.openai.com' && r.tokenMatched === true),
    'each with its Host and the expected token',
  );
  await t.rejects(
    post(route.v4, 'api.openai.com', readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8'), '{}'),
    'control: a client that does not trust the test CA refuses the server',
  );

  const viaVeth = new RegExp(`dev ${route.netns.replace('-', '')}h`);
  t.match(
    (await execa('ip', ['route', 'get', route.v4])).stdout,
    viaVeth,
    "control: while open, the API address is routed through the route's veth",
  );
  await route.stop();
  t.notOk((await execa('ip', ['netns', 'list'])).stdout.includes(route.netns), 'stop removes the network namespace');
  t.notOk(
    existsSync(path.join(stateDir, 'route.json')) || existsSync(path.dirname(route.socket)),
    'and route.json and the socket directory',
  );
  for (const address of [route.v4, route.v6]) {
    const via = await execa('ip', ['route', 'get', address], { reject: false });
    t.notMatch(`${via.stdout}${via.stderr}`, viaVeth, `and the route to ${address} through its veth`);
  }
});

// run --publish (issue 36), on a real session: the agent's HTTP server on the container's
// 127.0.0.1:8080 answers on the host's 127.0.0.1:HOSTPORT, carried by the launcher through its
// own unix socket, while the container still reaches nothing: a TCP server the host reaches on
// its own address (the control, taken from the world) is not reachable from inside. A host port
// that is taken is refused (80, publish-port-taken) before anything of the session exists.
import t from 'tap';
import { existsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { until } from '@agent-sandbox/testkit';
import { nothingLeft, sessionFixture, sessionNeeds } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';
const requirements = sessionNeeds({ images: [image] });

/** A free port on the host's loopback, as the kernel hands it out. */
async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function get(port: number, pathname: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: pathname, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/**
 * Where the control server listens: the host's first non-loopback IPv4 address, or its loopback
 * when it has none (the VM tier's guest): either way a server the host reaches on that address
 * and port, which the container, with no network of its own, must not.
 */
function controlAddress(): string {
  return (
    Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? '127.0.0.1'
  );
}

// The agent: an HTTP server on 127.0.0.1:8080 that echoes the path, and one attempt to reach the
// host's control server directly, its outcome written into the workspace.
const agentScript = (target: string) => `
const http = require('http'), net = require('net'), fs = require('fs');
const server = http.createServer((req, res) => res.end('from inside: ' + req.url));
server.listen(8080, '127.0.0.1', () => {
  const s = net.connect(${JSON.stringify(target.split(':')[1])}, ${JSON.stringify(target.split(':')[0])});
  s.setTimeout(3000, () => s.destroy(new Error('timed out')));
  s.on('connect', () => { fs.writeFileSync('.direct', 'connected'); s.destroy(); });
  s.on('error', (e) => fs.writeFileSync('.direct', 'failed: ' + e.code + ' ' + e.message));
  fs.writeFileSync('.running', '');
});
`;

t.test('a published port carries a real HTTP exchange while the container reaches nothing else', requirements, async (t) => {
  const address = controlAddress();
  const control = net.createServer((s) => s.end('control\n'));
  await new Promise<void>((resolve) => control.listen(0, address, resolve));
  t.teardown(() => control.close());
  const target = `${address}:${(control.address() as net.AddressInfo).port}`;
  // The control: the host reaches that server on that address.
  const reached = await new Promise<string>((resolve) => {
    const s = net.connect(Number(target.split(':')[1]), address);
    s.on('data', (d) => resolve(String(d)));
    s.on('error', (e) => resolve(`error ${e.message}`));
  });
  t.equal(reached, 'control\n', `the host reaches ${target} (the control)`);

  const fx = await sessionFixture(t, 'publish');
  const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
  const root = ['--root', fx.root];
  const hostPort = await freeLoopbackPort();
  const script = `${agentScript(target)}\nsetInterval(() => {}, 1000);`;
  const session = fx.run(['run', ...flags, '--image', image, '--publish', `${hostPort}:8080`, '--agent-bin', 'node', '--', '-e', script], {
    timeoutMs: 180_000,
  });
  await until('the agent serves', () => existsSync(path.join(fx.workspace, '.running')), 90_000);

  const answers: { status: number; body: string }[] = [];
  for (let i = 0; i < 5; i += 1) answers.push(await get(hostPort, `/hello-${i}`));
  t.same(
    answers,
    [0, 1, 2, 3, 4].map((i) => ({ status: 200, body: `from inside: /hello-${i}` })),
    `127.0.0.1:${hostPort} answers from the agent's server, five exchanges in a row`,
  );
  const parallel = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => get(hostPort, `/p${i}`)));
  t.same(parallel.map((a) => a.body).sort(), [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `from inside: /p${i}`).sort(), 'and eight at once');

  await until('the direct attempt ended', () => existsSync(path.join(fx.workspace, '.direct')), 30_000);
  const direct = await fx.run(['shell', fx.id, ...root, '--', 'cat', '.direct']);
  t.match(direct.stdout, /^failed: /, `from inside, ${target} is not reached (${direct.stdout})`);

  const ps = await fx.run(['ps', ...root, '--json']);
  t.match(JSON.parse(ps.stdout.trim()), { workspace: fx.id, published: [{ hostPort, port: 8080 }] }, 'ps names the published port');

  const stop = await fx.run(['stop', fx.id, ...root, '--grace', '1']);
  t.equal(stop.exitCode, 0, stop.stderr);
  await session;
  const [line] = fx.ledgerLines();
  t.match(line, { reason: 'stopped', published: [{ hostPort, port: 8080 }] }, 'the ledger line says what was published');
  await t.rejects(get(hostPort, '/after'), 'once the session ended, the host port answers nothing');
  t.same(await fx.leftovers(), nothingLeft, 'nothing is left');
});

t.test('a taken host port is refused before anything of the session exists', requirements, async (t) => {
  const fx = await sessionFixture(t, 'publish-taken');
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.teardown(() => holder.close());
  const taken = (holder.address() as net.AddressInfo).port;
  const refused = await fx.run(['run', ...fx.flags, '--publish', `${taken}:8080`, '--', ...fx.agentArgs(0)]);
  t.equal(refused.exitCode, 80, refused.stderr);
  t.match(refused.stderr, new RegExp(`--publish ${taken}:8080: cannot listen on 127.0.0.1:${taken}`), 'the message names the port');
  t.match(fx.ledgerLines()[0], { outcome: 'refused', reason: 'publish-port-taken' });
  t.equal(fx.ranInWorkspace(), undefined, 'the agent never ran');
  t.same(await fx.leftovers(), nothingLeft, 'nothing is left');
});

// The relay (the one-file bundle the image starts as egress-relay, from a snapshot of it) forwards
// 127.0.0.1:<port> to the broker's unix socket byte for byte; with no broker there, a client
// gets a reset, not a connection anywhere else; it listens on loopback only; with a command
// it runs it once listening, hands it the proxy variables, passes signals on and its status out.
import t, { type Test } from 'tap';
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort, repoRoot, tempDir } from '@agent-sandbox/testkit';
import { copyFile } from 'node:fs/promises';
import { socketDir } from '../fixtures/broker-session.js';
import { roundTrip } from '../fixtures/relay-kit.js';

const bundle = path.join(repoRoot, 'image/build/bin/egress-relay');
if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`pnpm run build\``);
// The same bytes, named .cjs: under this repository's package.json ("type": "module") an
// extensionless file would be loaded as an ES module; in the image it has no package.json above.
const copyDir = await tempDir(t, 'astest-relay-');
const relayFile = path.join(copyDir, 'egress-relay.cjs');
await copyFile(bundle, relayFile);
const relay = process.execPath;
const relayArgs = (args: string[]) => [relayFile, ...args];

async function startRelayProcess(t: Test, socketPath: string, extra: string[] = []) {
  const port = await freePort();
  const child = execa(relay, relayArgs(['--socket', socketPath, '--listen', `127.0.0.1:${port}`, ...extra]), {
    reject: false,
    stderr: 'pipe',
  });
  t.teardown(() => {
    child.kill('SIGKILL');
    return child.catch(() => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => d.toString().includes('listening') && resolve());
    void child.then((r) => reject(new Error(`relay exited: ${r.stderr}`)));
  });
  return { child, port };
}

t.test('bytes go to the socket and back unchanged, and a half-close reaches the other side', async (t) => {
  const dir = await socketDir(t);
  const received: Buffer[] = [];
  const echo = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('data', (d) => received.push(d));
    s.on('end', () => s.end(Buffer.concat([Buffer.from('reply:'), Buffer.concat(received)])));
  });
  echo.listen(`${dir}/broker.sock`);
  t.teardown(() => echo.close());
  const { port } = await startRelayProcess(t, `${dir}/broker.sock`);
  const payload = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
  const { data, error } = await roundTrip(port, payload);
  t.equal(error, undefined);
  t.ok(Buffer.concat(received).equals(payload), 'the socket got every byte in order');
  t.ok(data.equals(Buffer.concat([Buffer.from('reply:'), payload])), 'the client got the reply, sent after the client ended its side');
});

t.test('with no broker on the socket a client gets a reset and no bytes', async (t) => {
  const dir = await socketDir(t);
  const { port } = await startRelayProcess(t, `${dir}/absent.sock`);
  const { data, error } = await roundTrip(port, Buffer.from('CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n'));
  t.equal(data.length, 0);
  t.equal(error, 'ECONNRESET');
});

t.test('it listens on loopback only, and refuses bad usage with exit 80', async (t) => {
  for (const args of [
    ['--socket', '/x.sock', '--listen', '0.0.0.0:3128'],
    ['--socket', '/x.sock', '--listen', '[::]:3128'],
    ['--listen', '3128'],
    ['--socket', 'rel.sock'],
    ['--socket', '/x.sock', '--'],
    ['--bogus'],
  ]) {
    const result = await execa(relay, relayArgs(args), { reject: false });
    t.equal(result.exitCode, 80, `${args.join(' ')}: ${result.stderr.split('\n')[0]}`);
  }
});

t.test('with a command: it runs once listening, gets the proxy variables, and its status is the exit status', async (t) => {
  const dir = await socketDir(t);
  const port = await freePort();
  const script = 'env | grep -i _proxy= | sort; exec sh -c "exit 42"';
  const result = await execa(
    relay,
    relayArgs(['--socket', `${dir}/s.sock`, '--listen', String(port), '--proxy-env', '--', 'sh', '-c', script]),
    { reject: false },
  );
  t.equal(result.exitCode, 42);
  const url = `http://127.0.0.1:${port}`;
  t.same(result.stdout.split('\n'), [
    `ALL_PROXY=${url}`,
    `HTTPS_PROXY=${url}`,
    `HTTP_PROXY=${url}`,
    'NO_PROXY=localhost,127.0.0.1,::1',
    `all_proxy=${url}`,
    `http_proxy=${url}`,
    `https_proxy=${url}`,
    'no_proxy=localhost,127.0.0.1,::1',
  ]);
  // A broker that accepts and holds the connection: with none, the relay resets the client at
  // once, and under load that reset can reach the command before its connect callback runs.
  const held = new Set<net.Socket>();
  const broker = net.createServer((s) => held.add(s)).listen(`${dir}/s.sock`);
  await new Promise((resolve) => broker.once('listening', resolve));
  t.teardown(() => {
    for (const s of held) s.destroy();
    broker.close();
  });
  const connectOnce = `require('net').connect(${port}, '127.0.0.1').on('connect', () => process.exit(0)).on('error', (e) => { console.error(e.code); process.exit(9); })`;
  const listening = await execa(
    relay,
    relayArgs(['--socket', `${dir}/s.sock`, '--listen', String(port), '--', 'node', '-e', connectOnce]),
    { reject: false },
  );
  t.equal(
    listening.exitCode,
    0,
    `the command could connect to the relay at once (exit ${listening.exitCode}, signal ${listening.signal}, stderr ${listening.stderr})`,
  );
});

t.test('SIGTERM to the relay reaches the command', async (t) => {
  const dir = await socketDir(t);
  const child = execa(
    relay,
    relayArgs([
      '--socket',
      `${dir}/s.sock`,
      '--listen',
      String(await freePort()),
      '--',
      'sh',
      '-c',
      'trap "echo got-term; exit 3" TERM; echo ready; while :; do sleep 0.1; done',
    ]),
    { reject: false },
  );
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  child.kill('SIGTERM');
  const result = await child;
  t.equal(result.exitCode, 3);
  t.match(result.stdout, /got-term/);
});

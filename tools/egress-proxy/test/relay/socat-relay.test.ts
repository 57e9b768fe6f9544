// The session's relay as the container runs it (src/relay/socat-relay.ts: socat started beside
// the command by a sh script), run here on the host with the host's socat: bytes go to the socket
// and back unchanged, a half-close keeps the other direction open past socat's default half
// second; with no broker a client gets no bytes and a closed connection; the command runs only
// once the port is listening and its status is the exit status; a port that cannot be listened
// on is exit 1 and no command; each open connection is one more process (counted against --pids).
import t, { type Test } from 'tap';
import { execa, type ResultPromise } from 'execa';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '@agent-sandbox/testkit';
import { socatRelayPrefix } from '../../dist/index.js';
import { socketDir } from '../fixtures/broker-session.js';
import { holdingBroker, roundTrip } from '../fixtures/relay-kit.js';

const hasSocat = (await execa('sh', ['-c', 'command -v socat'], { reject: false })).exitCode === 0;
const requirements = { skip: hasSocat ? false : 'socat is not installed on this host' };

/** The pids of the socat processes listening on (or forked from the listener of) `port`. */
function socatsOn(port: number): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.endsWith('socat') && argv.some((a) => a.startsWith(`TCP-LISTEN:${port},`))) pids.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * The script with `command`, in a process group of its own (as tini runs the container's
 * command); socat runs in a session of its own and outlives the command: the teardown kills it
 * by its port.
 */
function startRelay(t: Test, socketPath: string, port: number, command: string[], maxChildren = 16): ResultPromise {
  const [sh, ...args] = socatRelayPrefix(socketPath, port, maxChildren);
  const child = execa(sh!, [...args, ...command], { reject: false, detached: true, stdin: 'ignore' });
  t.teardown(() => {
    for (const pid of [-child.pid!, ...socatsOn(port)]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    return child.catch(() => undefined);
  });
  return child;
}

/** A relay whose command waits until the test ends, started and listening. */
async function listeningRelay(t: Test, socketPath: string, maxChildren?: number) {
  const port = await freePort();
  const child = startRelay(t, socketPath, port, ['sh', '-c', 'echo ready; exec sleep 600'], maxChildren);
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  return { child, port };
}

t.test('bytes go to the socket and back unchanged; a half-closed client still gets a reply sent 1 s later', requirements, async (t) => {
  const dir = await socketDir(t);
  const received: Buffer[] = [];
  const echo = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('data', (d) => received.push(d));
    s.on('end', () => setTimeout(() => s.end(Buffer.concat([Buffer.from('reply:'), Buffer.concat(received)])), 1000));
  });
  echo.listen(`${dir}/broker.sock`);
  t.teardown(() => echo.close());
  const { port } = await listeningRelay(t, `${dir}/broker.sock`);
  const payload = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
  const { data, error } = await roundTrip(port, payload);
  t.equal(error, undefined);
  t.ok(Buffer.concat(received).equals(payload), 'the socket got every byte in order');
  t.ok(data.equals(Buffer.concat([Buffer.from('reply:'), payload])), 'the client got the reply, sent a second after it ended its side');
});

t.test('with no broker on the socket a client gets no bytes and a closed connection', requirements, async (t) => {
  const dir = await socketDir(t);
  const { port } = await listeningRelay(t, `${dir}/absent.sock`);
  const { data, error } = await roundTrip(port, Buffer.from('CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n'));
  t.equal(data.length, 0);
  t.ok(error === undefined || error === 'ECONNRESET', `closed or reset (${error ?? 'closed'})`);
});

t.test('the command runs once the port listens, and its status is the exit status', requirements, async (t) => {
  const dir = await socketDir(t);
  const held = await holdingBroker(t, `${dir}/s.sock`);
  const port = await freePort();
  const connectOnce = `require('net').connect(${port}, '127.0.0.1').on('connect', () => process.exit(42)).on('error', (e) => { console.error(e.code); process.exit(9); })`;
  const result = await startRelay(t, `${dir}/s.sock`, port, [process.execPath, '-e', connectOnce]);
  t.equal(result.exitCode, 42, `the command connected at once and exited 42 (stderr ${result.stderr})`);
});

t.test('a port it cannot listen on: exit 1, said on stderr, and the command never runs', requirements, async (t) => {
  const dir = await socketDir(t);
  const taken = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => taken.once('listening', resolve));
  t.teardown(() => taken.close());
  const port = (taken.address() as net.AddressInfo).port;
  const result = await startRelay(t, `${dir}/s.sock`, port, ['sh', '-c', 'echo ran']);
  t.equal(result.exitCode, 1);
  t.equal(result.stdout, '', 'the command did not run');
  t.match(result.stderr, /cannot listen on 127\.0\.0\.1:/);
});

t.test('each open connection is one more socat process (counted against --pids)', requirements, async (t) => {
  const dir = await socketDir(t);
  const held = await holdingBroker(t, `${dir}/s.sock`);
  const { port } = await listeningRelay(t, `${dir}/s.sock`);
  const clients = await Promise.all(
    [1, 2, 3].map(
      () =>
        new Promise<net.Socket>(
          (resolve) =>
            void net.connect(port, '127.0.0.1').once('connect', function (this: net.Socket) {
              resolve(this);
            }),
        ),
    ),
  );
  for (let i = 0; i < 100 && held.length < 3; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(held.length, 3, 'the broker holds 3 connections');
  t.equal(socatsOn(port).length, 4, 'the listener and one process per connection');
  for (const c of clients) c.destroy();
});

t.test('at most maxChildren connections at once: the next waits until one ends, then goes through', requirements, async (t) => {
  const dir = await socketDir(t);
  const held = await holdingBroker(t, `${dir}/s.sock`);
  const { port } = await listeningRelay(t, `${dir}/s.sock`, 2);
  const clients = [1, 2, 3].map(() => net.connect(port, '127.0.0.1').on('error', () => undefined));
  t.teardown(() => clients.forEach((c) => c.destroy()));
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
  await settle();
  t.equal(held.length, 2, 'two reach the broker');
  clients[0]!.destroy();
  for (let i = 0; i < 100 && held.length < 3; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(held.length, 3, 'the third reaches it once the first has ended');
});

t.test("a terminal's Ctrl-C (SIGINT to the command's process group) reaches the command, not the relay", requirements, async (t) => {
  const dir = await socketDir(t);
  const held = await holdingBroker(t, `${dir}/s.sock`);
  const port = await freePort();
  // An agent that takes Ctrl-C as "stop what you are doing", not as the end.
  const child = startRelay(t, `${dir}/s.sock`, port, ['sh', '-c', 'trap "echo interrupted" INT; echo ready; while :; do sleep 0.1; done']);
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  process.kill(-child.pid!, 'SIGINT');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const connected = await new Promise<boolean>((resolve) => {
    const c = net.connect(port, '127.0.0.1', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
  t.ok(connected, 'the relay still listens after the Ctrl-C');
  t.equal(socatsOn(port).length >= 1, true, 'socat is still there');
});

// The --publish seam flooded (issue 36): the launcher's side of a published port, with its own
// unix socket, taken as the relay inside the container would take it (the same socket path a
// session's processes reach), and as the host's clients would. What it keeps is bounded: 16
// idle offers per port (the 17th and later are closed), 64 clients waiting for an offer (the
// 65th and later are closed), an offer for a port that was not published, or one that is not a
// port, is closed unread. No podman: the seam is the launcher's socket and port.
import t from 'tap';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, tempDir } from '@agent-sandbox/testkit';
import { publishSocketName, startPublish } from '../../dist/egress/publish.js';

/** Opens `n` connections made by `open`, waits, and says how many the other side closed. */
async function flood(n: number, open: () => net.Socket): Promise<{ sockets: net.Socket[]; closed: () => number }> {
  const sockets: net.Socket[] = [];
  const closed = new Set<net.Socket>();
  for (let i = 0; i < n; i += 1) {
    const s = open();
    s.on('error', () => undefined);
    s.on('close', () => closed.add(s));
    sockets.push(s);
  }
  await sleep(1000);
  return { sockets, closed: () => closed.size };
}

t.test("the launcher's side of a published port keeps at most 16 offers and 64 waiting clients per port", async (t) => {
  const dir = await tempDir(t, 'astest-publish-flood-');
  const hostPort = await freePort();
  const running = await startPublish({
    ports: [{ hostPort, port: 8080 }],
    socketDir: path.join(dir, 'publish'),
    relay: path.join(dir, 'relay.cjs'),
  });
  const sockets: net.Socket[] = [];
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await running.stop();
  });
  const socketPath = path.join(dir, 'publish', publishSocketName);

  // An offer as the relay makes one: its line, then the connection kept open for the go byte.
  const offer = (line: string) => () => {
    const s = net.connect({ path: socketPath });
    s.write(line);
    return s;
  };
  const offers = await flood(100, offer('8080\n'));
  sockets.push(...offers.sockets);
  t.equal(offers.closed(), 100 - 16, '100 offers for the published port: 16 are kept, 84 closed');

  const foreign = await flood(10, offer('9090\n'));
  const junk = await flood(10, offer('GET / HTTP/1.1\r\n'));
  sockets.push(...foreign.sockets, ...junk.sockets);
  t.equal(foreign.closed(), 10, 'an offer for a port that was not published is closed');
  t.equal(junk.closed(), 10, 'so is one that is not a port');

  const clients = await flood(100, () => net.connect({ host: '127.0.0.1', port: hostPort }));
  sockets.push(...clients.sockets);
  t.equal(clients.closed(), 100 - 16 - 64, '100 clients on the host: 16 paired with the offers, 64 waiting, 20 closed');
});

// A flood of connections against the real broker (library, real unix socket): new attempts
// start at the rate limit's pace and the rest wait, unread, for their turn; past the cap on
// open and waiting ones, connections are refused or closed unread, and all of them are counted.
import net from 'node:net';
import t from 'tap';
import { ask, brokerSession, connectBroker } from '../fixtures/broker-session.js';

// A slow rate (2/s), so that the half second a loaded machine may take to open 11 connections
// refills less than one token: which of them must wait does not depend on the machine's load.
t.test('11 denials at once under 2/s with a burst of 5: all answered 403, 6 waited, and the last after about 3 s', async (t) => {
  const { socketPath, broker } = await brokerSession(t, { allow: [], rate: { perSecond: 2, burst: 5 } });
  const began = performance.now();
  const replies = await Promise.all(Array.from({ length: 11 }, (_, i) => ask(socketPath, `CONNECT n${i}.example:443 HTTP/1.1\r\n\r\n`)));
  const ms = performance.now() - began;
  t.same([...new Set(replies.map((r) => r.status))], [403]);
  t.ok(ms >= 2750, `the last answer came after ${Math.round(ms)} ms (6 tokens at 2/s: 3000 ms)`);
  const summary = await broker.stop();
  t.match(summary, { attempts: 11, denied: 11, rate: { perSecond: 2, burst: 5, delayed: 6 } });
});

t.test(
  '40 silent connections at once with maxConnections 10: 10 held, every other one refused or closed unread, and each counted as too-many-connections',
  async (t) => {
    const { socketPath, broker } = await brokerSession(t, { allow: [], maxConnections: 10 });
    const holders: net.Socket[] = [];
    const ends = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const socket = await connectBroker(socketPath).catch(() => undefined);
        if (!socket) return 'refused at connect';
        holders.push(socket);
        return await new Promise<string>((resolve) => {
          let data = '';
          socket.on('data', (d: Buffer) => (data += d.toString('latin1'))).on('error', () => undefined);
          socket.once('close', () => resolve(data.startsWith('HTTP/1.1 503') ? '503' : 'closed'));
          setTimeout(() => resolve('held'), 1000);
        });
      }),
    );
    const held = ends.filter((e) => e === 'held').length;
    t.equal(held, 10, `held: ${held}; the rest: ${ends.filter((e) => e !== 'held').join(', ')}`);
    t.ok(ends.includes('503'), 'the first one over the cap was told why (503)');
    for (const socket of holders) socket.destroy();
    const summary = await broker.stop();
    const over = summary.refused.find((r) => r.rule === 'too-many-connections');
    t.equal(over?.count, 30, 'the 30 over the cap are counted');
    t.equal(summary.attempts, 40, 'the 10 held ones are counted too (closed without a request)');
  },
);

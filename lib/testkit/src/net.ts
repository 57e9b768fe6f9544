/** Loopback ports for tests: a free one, and waiting until one answers. */
import net from 'node:net';
import { until } from './wait.js';

/** A free loopback port: listened on, then closed (good enough for one test at a time). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether a TCP connect to 127.0.0.1:port succeeds now. */
export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** Waits until 127.0.0.1:port accepts a connection; rejects naming `what` after `ms`. */
export async function untilListening(what: string, port: number, ms: number): Promise<number> {
  return await until(`${what} listening on 127.0.0.1:${port}`, () => answers(port), ms);
}

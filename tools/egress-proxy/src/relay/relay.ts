/**
 * The in-container relay: listens on 127.0.0.1:<port> inside a `--network none` container
 * and forwards each TCP connection byte for byte to the broker's unix socket, which is the
 * container's only way out. It knows nothing of HTTP: the broker decides. Runs on Debian's
 * node 18 as a single bundled file, so it imports only node builtins; `net` is loaded on first
 * use, because the image starts the relay from a V8 startup snapshot of its bundle and node 18
 * cannot snapshot `net` (lib/shared/src/snapshot-entry.ts).
 */
import type net from 'node:net';
import { net as loadNet } from './snapshot-builtins.cjs';

export interface RelayOptions {
  /** 127.0.0.1 or ::1: the relay is for processes inside the container only. */
  host: string;
  /** 0: any free port (see Relay.port). */
  port: number;
  socketPath: string;
}

export interface Relay {
  port: number;
  close(): Promise<void>;
}

/** Ends `socket` so the peer sees a reset, not a clean end (the broker is unreachable). */
function reset(socket: net.Socket): void {
  if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else socket.destroy();
}

function forward(client: net.Socket, socketPath: string, open: Set<net.Socket>): void {
  const upstream = loadNet().connect({ path: socketPath, allowHalfOpen: true });
  for (const s of [client, upstream]) {
    open.add(s);
    s.once('close', () => open.delete(s));
  }
  let connected = false;
  upstream.once('connect', () => (connected = true));
  upstream.on('error', () => (connected ? client.destroy() : reset(client)));
  client.on('error', () => upstream.destroy());
  upstream.once('close', () => {
    if (!client.destroyed) client.end(() => client.destroy());
  });
  client.once('close', () => upstream.destroy());
  client.pipe(upstream);
  upstream.pipe(client);
}

export function startRelay(options: RelayOptions): Promise<Relay> {
  if (options.host !== '127.0.0.1' && options.host !== '::1') {
    return Promise.reject(new Error(`the relay listens on 127.0.0.1 or ::1 only, not ${options.host}`));
  }
  const open = new Set<net.Socket>();
  // noDelay: the relay forwards whatever chunks arrive; Nagle would hold a small one back.
  const server = loadNet().createServer({ allowHalfOpen: true, noDelay: true }, (client) => forward(client, options.socketPath, open));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.host, port: options.port, exclusive: true }, () => {
      server.off('error', reject);
      server.on('error', () => undefined); // an accept(2) failure must not end the relay
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address ? address.port : options.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const s of open) s.destroy();
          }),
      });
    });
  });
}

/**
 * The in-container end of `run --publish`: the egress relay in reverse. The container has no
 * network, and the launcher's unix socket (its directory mounted read-only, as the broker's is)
 * is the only thing between the host's 127.0.0.1:HOSTPORT and the container's 127.0.0.1:PORT.
 * The connection is made from inside: for each published port this relay keeps a few offers
 * open to the launcher's socket (a line `PORT\n`, then waiting); when a client arrives on the
 * host, the launcher answers one offer with `\n`, and only then does the relay connect to
 * 127.0.0.1:PORT and carry the bytes both ways, and open a new offer. So the launcher never
 * connects to a path the session could have replaced, and the session can offer only its own
 * servers. Node builtins only (it runs on the image's node 18 as one bundled file).
 */
import type net from 'node:net';
import { net as loadNet } from './snapshot-builtins.cjs';

export interface PublishRelayOptions {
  socketPath: string;
  ports: number[];
  /** Offers kept open per port (connections that can start at once without waiting for a new offer). */
  offers?: number;
}

export interface PublishRelay {
  close(): void;
}

const retryMs = 200;

/** Carries one client: `rest` is what the launcher sent after its go byte (the client's first bytes). */
function carry(offer: net.Socket, port: number, rest: Buffer): void {
  const local = loadNet().connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  local.setNoDelay(true);
  local.once('connect', () => {
    if (rest.length > 0) local.write(rest);
    offer.pipe(local);
    local.pipe(offer);
  });
  local.on('error', () => offer.destroy());
  offer.on('error', () => local.destroy());
  // A side that closes ends the other once its writes are out.
  local.once('close', () => offer.end(() => offer.destroy()));
  offer.once('close', () => local.end(() => local.destroy()));
}

export function startPublishRelay(options: PublishRelayOptions): PublishRelay {
  const open = new Set<net.Socket>();
  let closed = false;
  const offer = (port: number): void => {
    if (closed) return;
    const socket = loadNet().connect({ path: options.socketPath, allowHalfOpen: true });
    open.add(socket);
    let used = false;
    socket.once('connect', () => socket.write(`${port}\n`));
    socket.once('data', (chunk: Buffer) => {
      used = true;
      offer(port);
      if (chunk[0] !== 0x0a) {
        socket.destroy();
        return;
      }
      // Held until the local connection is made (its pipe resumes it): nothing the client sends is lost.
      socket.pause();
      carry(socket, port, chunk.subarray(1));
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      open.delete(socket);
      // An offer the launcher closed unused (it was going away, or not yet listening): try again.
      if (!used) setTimeout(() => offer(port), retryMs).unref();
    });
  };
  for (const port of options.ports) for (let i = 0; i < (options.offers ?? 2); i += 1) offer(port);
  return {
    close() {
      closed = true;
      for (const s of open) s.destroy();
    },
  };
}

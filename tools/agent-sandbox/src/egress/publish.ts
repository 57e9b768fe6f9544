/**
 * `run --publish [HOSTPORT:]PORT`: the agent's server on the container's 127.0.0.1:PORT answers
 * on the host's 127.0.0.1:HOSTPORT, and the container keeps no network. The launcher listens on
 * the host's loopback only, and carries each connection through a unix socket in the session's
 * own runtime directory (mounted read-only at /run/sandbox-publish, as the broker's is), where
 * the container's publish-relay (tools/egress-proxy/src/relay/publish-relay.ts, mounted from
 * this install and started with the image's node) keeps offers waiting. A client is paired with
 * a waiting offer of its port; the launcher only ever accepts on its own socket, so nothing the
 * session writes can point it elsewhere. Every queue is bounded.
 *
 * The ports are taken first, before anything of the session exists: a taken port is refused
 * (80, publish-port-taken) with nothing to undo.
 */
import path from 'node:path';
import net from 'node:net';
import { chownSync, rmSync } from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import { publishRelayPath } from '@agent-sandbox/egress-proxy';
import { agentGid, agentUid } from '@agent-sandbox/shared/container-layout';
import type { PublishedPort } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { egressSocketDir, makeSocketDir } from './broker.js';

export const publishMount = '/run/sandbox-publish';
export const publishSocketName = 'publish.sock';
/** Where the relay's bundle appears inside the container. */
export const relayInContainer = '/usr/local/lib/agent-sandbox-publish/publish-relay.cjs';

/** Offers waiting per port, clients waiting for an offer, and how long one waits. */
const limits = { idleOffers: 16, waitingClients: 64, waitMs: 10_000, headerBytes: 8 };

export interface PublishPlan {
  ports: PublishedPort[];
  /** The socket's directory (when ports are published). */
  socketDir?: string;
  /** The relay bundle on the host. */
  relay?: string;
}

/** `[HOSTPORT:]PORT` -> the pair (HOSTPORT is PORT when not given); refused (80) naming the entry. */
export function parsePublish(entry: string): PublishedPort {
  const m = /^(?:([0-9]{1,5}):)?([0-9]{1,5})$/.exec(entry);
  const [hostPort, port] = m ? [Number(m[1] ?? m[2]), Number(m[2])] : [NaN, NaN];
  if (!m || !(hostPort >= 1 && hostPort <= 65535 && port >= 1 && port <= 65535)) {
    throw new ToolError(
      'usage',
      'bad-flag',
      `--publish: expected [HOSTPORT:]PORT with ports from 1 to 65535, got ${JSON.stringify(entry)}`,
    );
  }
  return { hostPort, port };
}

/** The session's publish plan: each entry parsed, a host port at most once. */
export function publishPlanOf(entries: string[], sessionId: string): PublishPlan {
  const ports = entries.map(parsePublish);
  const twice = ports.find((p, i) => ports.findIndex((q) => q.hostPort === p.hostPort) !== i);
  if (twice) throw new ToolError('usage', 'bad-flag', `--publish: host port ${twice.hostPort} is given twice`);
  if (ports.length === 0) return { ports };
  return { ports, socketDir: path.join(path.dirname(egressSocketDir(sessionId)), '..', 'publish', sessionId), relay: publishRelayPath() };
}

/** The mounts a published session gets: the socket's directory and the relay, both read-only. */
export function publishMounts(plan: PublishPlan): { source: string; destination: string; readOnly: true }[] {
  if (!plan.socketDir || !plan.relay) return [];
  return [
    { source: plan.socketDir, destination: publishMount, readOnly: true },
    { source: plan.relay, destination: relayInContainer, readOnly: true },
  ];
}

/** The relay in front of the agent's command (its offers start, then the command runs). */
export function publishPrefix(plan: PublishPlan): string[] {
  if (plan.ports.length === 0) return [];
  return [
    'node',
    relayInContainer,
    '--socket',
    `${publishMount}/${publishSocketName}`,
    ...plan.ports.flatMap((p) => ['--port', String(p.port)]),
    '--',
  ];
}

export interface RunningPublish {
  /** Closes the listeners and every connection; removes the socket's directory. Idempotent. */
  stop(): Promise<void>;
}

function listen(server: net.Server, options: net.ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => {
      server.off('error', reject);
      server.on('error', () => undefined); // an accept(2) failure must not end the session
      resolve();
    });
  });
}

function remove<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}

/** Pairs host clients with the container's offers, per container port. */
class Pairing {
  private readonly offers = new Map<number, net.Socket[]>();
  private readonly waiting = new Map<number, { client: net.Socket; timer: NodeJS.Timeout }[]>();
  readonly open = new Set<net.Socket>();

  track(s: net.Socket): void {
    this.open.add(s);
    s.once('close', () => this.open.delete(s));
    s.on('error', () => s.destroy());
  }

  /** An offer from inside, for `port`: paired with a waiting client, or kept (bounded). */
  offer(port: number, socket: net.Socket): void {
    const next = this.waiting.get(port)?.shift();
    if (next) {
      clearTimeout(next.timer);
      return this.join(next.client, socket);
    }
    const list = this.offers.get(port) ?? [];
    if (list.length >= limits.idleOffers) return void socket.destroy();
    list.push(socket);
    this.offers.set(port, list);
    socket.once('close', () => remove(list, socket));
  }

  /** A client on the host, for `port`: paired with a waiting offer, or it waits (bounded). */
  client(port: number, client: net.Socket): void {
    const offer = this.offers.get(port)?.shift();
    if (offer) return this.join(client, offer);
    const list = this.waiting.get(port) ?? [];
    if (list.length >= limits.waitingClients) return void client.destroy();
    const entry = { client, timer: setTimeout(() => client.destroy(), limits.waitMs) };
    list.push(entry);
    this.waiting.set(port, list);
    client.once('close', () => (clearTimeout(entry.timer), remove(list, entry)));
  }

  /** The go byte, then the bytes both ways; a side that closes ends the other once its writes are out. */
  private join(client: net.Socket, offer: net.Socket): void {
    offer.write('\n');
    client.pipe(offer);
    offer.pipe(client);
    client.once('close', () => offer.end(() => offer.destroy()));
    offer.once('close', () => client.end(() => client.destroy()));
  }

  clear(): void {
    for (const list of this.waiting.values()) for (const w of list) clearTimeout(w.timer);
    for (const s of this.open) s.destroy();
  }
}

/** Reads an offer's `PORT\n` (bounded) and hands it on; anything else is closed. */
function readOffer(socket: net.Socket, ports: Set<number>, pairing: Pairing): void {
  let head = '';
  const onData = (chunk: Buffer) => {
    head += chunk.toString('latin1');
    const end = head.indexOf('\n');
    if (end < 0 && head.length < limits.headerBytes) return;
    socket.off('data', onData);
    socket.pause();
    const port = Number(head.slice(0, end));
    if (end < 0 || end + 1 !== head.length || !ports.has(port)) return void socket.destroy();
    pairing.offer(port, socket);
  };
  socket.on('data', onData);
}

/**
 * Takes the host ports (refused, 80 publish-port-taken, when one cannot be listened on), then
 * the socket the container's relay offers on. Call it before anything else of the session.
 */
export async function startPublish(plan: PublishPlan): Promise<RunningPublish> {
  if (!plan.socketDir || plan.ports.length === 0) return { stop: async () => undefined };
  const pairing = new Pairing();
  const servers: net.Server[] = [];
  const stop = async () => {
    pairing.clear();
    await Promise.all(servers.map((s) => new Promise<void>((done) => s.close(() => done()))));
    rmSync(plan.socketDir!, { recursive: true, force: true });
  };
  try {
    for (const { hostPort, port } of plan.ports) {
      const server = net.createServer(
        { noDelay: true, allowHalfOpen: true },
        (client) => (pairing.track(client), pairing.client(port, client)),
      );
      await listen(server, { host: '127.0.0.1', port: hostPort, exclusive: true }).catch((err: NodeJS.ErrnoException) => {
        throw new ToolError(
          'usage',
          'publish-port-taken',
          `--publish ${hostPort}:${port}: cannot listen on 127.0.0.1:${hostPort} on this host (${err.code ?? err.message}): another process holds it, or it is a privileged port`,
        );
      });
      servers.push(server);
    }
    makeSocketDir(plan.socketDir);
    const inner = net.createServer(
      { allowHalfOpen: true },
      (socket) => (pairing.track(socket), readOffer(socket, new Set(plan.ports.map((p) => p.port)), pairing)),
    );
    servers.push(inner);
    const socketPath = path.join(plan.socketDir, publishSocketName);
    await listen(inner, { path: socketPath });
    if ((process.geteuid?.() ?? 0) === 0) chownSync(socketPath, agentUid, agentGid);
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop };
}

/**
 * The API route's relay, run by api-route-host.ts inside the route's network namespace
 * (`ip netns exec <ns> node api-route-relay.js <config.json>`): every TCP connection accepted
 * at the API addresses is piped, bytes as they are, to the unix socket where one user's model
 * server listens. TLS stays end to end, between the agent and that server. A connection while
 * nothing listens there is closed at once. One JSON line per connection on stdout, and
 * {"event":"listening"} once every listener is up. Builtins only.
 *   config: {"listen":[{"address","port"}],"socket":"/run/.../model.sock"}
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

export interface RelayConfig {
  listen: { address: string; port: number }[];
  socket: string;
}

const emit = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);

/** Pipes one accepted connection to the socket, or closes it when nothing listens there. */
function relay(config: RelayConfig, client: net.Socket, port: number): void {
  const family = net.isIPv6(client.localAddress ?? '') ? 6 : 4;
  const upstream = net.connect(config.socket);
  let connected = false;
  client.on('error', () => upstream.destroy());
  upstream.once('connect', () => {
    connected = true;
    emit({ event: 'connection', port, family, forwarded: true });
    client.pipe(upstream).pipe(client);
  });
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    if (!connected) emit({ event: 'connection', port, family, forwarded: false, error: err.code ?? err.message });
    client.destroy();
  });
  upstream.on('close', () => client.destroy());
  client.on('close', () => upstream.destroy());
}

function listen(config: RelayConfig, at: { address: string; port: number }): Promise<void> {
  const server = net.createServer((client) => relay(config, client, at.port));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: at.address, port: at.port }, () => resolve());
  });
}

async function main(): Promise<void> {
  const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as RelayConfig;
  await Promise.all(config.listen.map((at) => listen(config, at)));
  emit({ event: 'listening', count: config.listen.length });
  process.once('SIGTERM', () => process.exit(0));
}

void main().catch((err: unknown) => {
  process.stderr.write(`api-route-relay: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

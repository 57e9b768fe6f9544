/**
 * Opens the API route (api-route-host.ts) for one user and holds it until SIGTERM: what the VM
 * tier's guest runs as root before the suites (vm/guest/run-in-guest.sh), so that uid 1000's
 * real agents reach the scripted model server by the real API names through their broker.
 *   node api-route-cli.js STATE_DIR UID [DNS_ADDRESS:PORT]   (default 127.0.0.1:53)
 * Prints each relay connection and name query as a JSON line; {"event":"ready",...} once
 * STATE_DIR/route.json is written; removes everything it made when stopped.
 */
import { openApiRoute } from './api-route-host.js';

const apiNames = ['api.openai.com', 'api.anthropic.com'];

async function main([stateDir, uid, dns = '127.0.0.1:53']: string[]): Promise<void> {
  const at = dns.lastIndexOf(':');
  if (!stateDir || !/^[0-9]+$/.test(uid ?? '') || at < 1) throw new Error('usage: api-route-cli.js STATE_DIR UID [DNS_ADDRESS:PORT]');
  const teardowns: (() => unknown)[] = [];
  const route = await openApiRoute(
    { teardown: (fn) => teardowns.push(fn) },
    {
      stateDir,
      uid: Number(uid),
      names: apiNames,
      dns: { address: dns.slice(0, at), port: Number(dns.slice(at + 1)) },
      onEvent: (from, event) => process.stdout.write(`${JSON.stringify({ from, ...event })}\n`),
    },
  );
  process.stdout.write(`${JSON.stringify({ event: 'ready', route })}\n`);
  const stop = async () => {
    for (const fn of teardowns.reverse()) await fn();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

void main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`api-route-cli: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

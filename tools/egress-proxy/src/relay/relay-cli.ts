/**
 * egress-relay's command line, for the image (bundled to /usr/local/lib/agent-sandbox/egress-relay.js
 * and started from its V8 startup snapshot; node 18, builtins only, child_process loaded on first
 * use: node 18 cannot snapshot it; flags parsed by hand like cred-stage's container side).
 *
 *   egress-relay --socket PATH [--listen [127.0.0.1:]PORT] [--proxy-env] [-- CMD ARGS...]
 *
 * With a command, the relay listens first and then runs it (so the command never races the
 * listener), passes signals on, and exits with its status. Without one it runs until SIGTERM.
 */
import { runChild } from './run-child.js';
import { startRelay, type Relay } from './relay.js';

export const defaultRelayPort = 3128;

export interface RelayArgs {
  socketPath: string;
  host: string;
  port: number;
  proxyEnv: boolean;
  command: string[];
}

export const relayUsage = `egress-relay: forward 127.0.0.1:PORT to the egress broker's unix socket

  egress-relay --socket PATH [--listen [127.0.0.1:]PORT] [--proxy-env] [-- CMD ARGS...]

  --listen     where to listen (default 127.0.0.1:${defaultRelayPort}); only 127.0.0.1 or [::1]
  --proxy-env  give CMD HTTPS_PROXY, HTTP_PROXY, ALL_PROXY (and lower-case) pointing at the relay,
               and NO_PROXY=localhost,127.0.0.1,::1
  -- CMD       run CMD once listening; exit with its status (signals are passed on)
Exit 80 on bad usage, 1 when it cannot listen, 127 when CMD cannot be started.
`;

class UsageError extends Error {}

function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:(127\.0\.0\.1|\[::1\]):)?([0-9]{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--listen: expected [127.0.0.1:]PORT or [::1]:PORT, got ${JSON.stringify(value)}`);
  return { host: m[1] === '[::1]' ? '::1' : '127.0.0.1', port };
}

export function parseRelayArgs(argv: string[]): RelayArgs {
  const end = argv.indexOf('--');
  const head = end < 0 ? argv : argv.slice(0, end);
  const args: RelayArgs = {
    socketPath: '',
    host: '127.0.0.1',
    port: defaultRelayPort,
    proxyEnv: false,
    command: end < 0 ? [] : argv.slice(end + 1),
  };
  for (let i = 0; i < head.length; i += 1) {
    const [flag, inline] = head[i]!.includes('=')
      ? [head[i]!.slice(0, head[i]!.indexOf('=')), head[i]!.slice(head[i]!.indexOf('=') + 1)]
      : [head[i]!, undefined];
    if (flag === '--proxy-env' && inline === undefined) {
      args.proxyEnv = true;
      continue;
    }
    if (flag !== '--socket' && flag !== '--listen') throw new UsageError(`unknown argument ${JSON.stringify(head[i])}`);
    const value = inline ?? head[(i += 1)];
    if (!value) throw new UsageError(`${flag}: expected a value`);
    if (flag === '--socket') args.socketPath = value;
    else Object.assign(args, parseListen(value));
  }
  if (!args.socketPath.startsWith('/')) throw new UsageError('--socket: expected the absolute path of the broker socket');
  if (end >= 0 && args.command.length === 0) throw new UsageError('--: expected a command after it');
  return args;
}

/** The proxy variables for a relay at host:port (what --proxy-env sets). */
export function proxyEnvironment(host: string, port: number): Record<string, string> {
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const env: Record<string, string> = {};
  for (const name of ['HTTPS_PROXY', 'HTTP_PROXY', 'ALL_PROXY']) env[name] = env[name.toLowerCase()] = url;
  env['NO_PROXY'] = env['no_proxy'] = 'localhost,127.0.0.1,::1';
  return env;
}

function runCommand(args: RelayArgs, relay: Relay): Promise<number> {
  const env = args.proxyEnv ? { ...process.env, ...proxyEnvironment(args.host, relay.port) } : process.env;
  return runChild('egress-relay', args.command, env);
}

/** The only place that touches stdio and the exit status. */
export async function runRelayCli(argv: string[] = process.argv.slice(2)): Promise<void> {
  let args: RelayArgs;
  try {
    if (argv.includes('--help') && (argv.indexOf('--') < 0 || argv.indexOf('--help') < argv.indexOf('--'))) {
      process.stdout.write(relayUsage);
      return;
    }
    args = parseRelayArgs(argv);
  } catch (err) {
    process.stderr.write(`egress-relay: ${err instanceof Error ? err.message : String(err)}\n${relayUsage}`);
    process.exitCode = 80;
    return;
  }
  let relay: Relay;
  try {
    relay = await startRelay({ host: args.host, port: args.port, socketPath: args.socketPath });
  } catch (err) {
    process.stderr.write(`egress-relay: cannot listen on ${args.host}:${args.port}: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
    return;
  }
  if (args.command.length > 0) {
    const status = await runCommand(args, relay);
    await relay.close();
    process.exitCode = status;
    return;
  }
  process.stderr.write(`egress-relay: listening on ${args.host}:${relay.port}, forwarding to ${args.socketPath}\n`);
  await new Promise<void>((resolve) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => resolve());
  });
  await relay.close();
}

/**
 * publish-relay's command line (bundled into one file by egress-proxy's `bundle` script, which the launcher mounts
 * read-only into a session run with --publish and starts with the image's node):
 *
 *   publish-relay --socket PATH --port PORT [--port PORT ...] -- CMD ARGS...
 *
 * It starts its offers (publish-relay.ts), runs CMD, passes signals on, and exits with its status.
 */
import { startPublishRelay } from './publish-relay.js';
import { runChild } from './run-child.js';

export const publishUsage = `publish-relay: carry the launcher's published host ports to 127.0.0.1:PORT in here

  publish-relay --socket PATH --port PORT [--port PORT ...] -- CMD ARGS...

Exit 80 on bad usage, 127 when CMD cannot be started, else CMD's status.
`;

export function parsePublishArgs(argv: string[]): { socketPath: string; ports: number[]; command: string[] } {
  const end = argv.indexOf('--');
  const head = end < 0 ? argv : argv.slice(0, end);
  const out = { socketPath: '', ports: [] as number[], command: end < 0 ? [] : argv.slice(end + 1) };
  for (let i = 0; i < head.length; i += 2) {
    const [flag, value] = [head[i], head[i + 1]];
    if (flag === '--socket' && value?.startsWith('/')) out.socketPath = value;
    else if (flag === '--port' && /^[0-9]{1,5}$/.test(value ?? '') && Number(value) >= 1 && Number(value) <= 65535)
      out.ports.push(Number(value));
    else throw new Error(`bad argument ${JSON.stringify(flag)} ${JSON.stringify(value ?? '')}`);
  }
  if (!out.socketPath || out.ports.length === 0 || out.command.length === 0)
    throw new Error('--socket, at least one --port and -- CMD are required');
  return out;
}

/** The only place that touches stdio and the exit status. */
export async function runPublishCli(argv: string[] = process.argv.slice(2)): Promise<void> {
  let args;
  try {
    args = parsePublishArgs(argv);
  } catch (err) {
    process.stderr.write(`publish-relay: ${(err as Error).message}\n${publishUsage}`);
    process.exitCode = 80;
    return;
  }
  const relay = startPublishRelay({ socketPath: args.socketPath, ports: args.ports });
  const status = await runChild('publish-relay', args.command, process.env);
  relay.close();
  process.exitCode = status;
}

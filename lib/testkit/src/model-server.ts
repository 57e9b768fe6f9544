/**
 * A scripted model server in a network namespace of its own: the only network a
 * contained agent gets is that namespace's loopback (`--network ns:/run/netns/<name>`),
 * where the server listens on 127.0.0.1. Nothing is reachable beyond it.
 */
import { execa, type ResultPromise } from 'execa';
import { createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from './run-bin.js';
import type { Teardown } from './temp-dir.js';

export type ScriptStep = { exec: string } | { write: { path: string; content: string } } | { say: string };

export interface ModelServer {
  netns: string;
  /** What sandbox-run / the launcher pass as the network. */
  network: string;
  port: number;
  /** Base URL as seen from inside the namespace (and the container). */
  url: string;
  /** Requests the server answered, without any token value. */
  requests(): Promise<{ api: string; step?: number; tokenMatched?: boolean; side?: boolean }[]>;
  stop(): Promise<void>;
}

export interface ModelServerOptions {
  steps: ScriptStep[];
  /** The canary the agent must present; only its SHA-256 reaches the server's argv. */
  expectedToken: string;
  dir: string;
  port?: number;
  /** Access token handed out by the refresh endpoint. */
  refreshAccessToken?: string;
}

async function ip(args: string[]): Promise<void> {
  await execa('ip', args);
}

export async function startModelServer(t: Teardown | undefined, options: ModelServerOptions): Promise<ModelServer> {
  const netns = `asns-${randomBytes(4).toString('hex')}`;
  const port = options.port ?? 8080;
  const script = path.join(options.dir, 'model-steps.json');
  const record = path.join(options.dir, 'model-requests.jsonl');
  await writeFile(script, JSON.stringify(options.steps));
  await writeFile(record, '');
  await ip(['netns', 'add', netns]);
  let child: ResultPromise | undefined;
  const stop = async () => {
    child?.kill('SIGTERM');
    await child?.catch(() => undefined);
    child = undefined;
    await execa('ip', ['netns', 'del', netns], { reject: false });
  };
  t?.teardown(stop);
  try {
    await ip(['netns', 'exec', netns, 'ip', 'link', 'set', 'lo', 'up']);
    const sha = createHash('sha256').update(options.expectedToken).digest('hex');
    const args = ['netns', 'exec', netns, process.execPath, path.join(repoRoot, 'test/model-server/model-server.mjs'),
      '--script', script, '--port', String(port), '--record', record, '--token-sha256', sha];
    if (options.refreshAccessToken) args.push('--refresh-access-token', options.refreshAccessToken);
    child = execa('ip', args, { stdio: ['ignore', 'ignore', 'pipe'], reject: false });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('model server did not start within 5 s')), 5000);
      child!.stderr!.on('data', (d: Buffer) => {
        if (d.toString().includes('listening')) {
          clearTimeout(timer);
          resolve();
        }
      });
      void child!.then(() => reject(new Error('model server exited early')));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    netns,
    network: `ns:/run/netns/${netns}`,
    port,
    url: `http://127.0.0.1:${port}`,
    requests: async () =>
      (await readFile(record, 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    stop,
  };
}

/**
 * A scripted model server (test/model-server/model-server.mjs), in one of three places:
 * - startModelServer: a network namespace of its own, plain HTTP on 127.0.0.1; the contained
 *   agent joins that namespace (`--network ns:/run/netns/<name>`) and reaches nothing else.
 * - startApiModelServer: inside the fake internet, speaking TLS on 443 under a certificate of
 *   the test CA for the real API names (api.openai.com, api.anthropic.com): the agent reaches
 *   it through the session's broker, by those names, as it would reach the real APIs.
 * - startSocketModelServer: TLS on a unix socket, in no namespace: the API route's relay
 *   (api-route.ts) pipes the API addresses' connections there. Needs no root.
 */
import { execa, type ResultPromise } from 'execa';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { ExtraHost, FakeInternet } from './fake-internet.js';
import { repoRoot } from './run-bin.js';
import type { Teardown } from './temp-dir.js';

export type ScriptStep = { exec: string } | { write: { path: string; content: string } } | { say: string };

/** A request as the server received it; credential header values only as "sha256:<hex>" of the token. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  body: string;
}

export interface ModelRequest {
  api: string;
  step?: number;
  tokenMatched?: boolean;
  /** Answers no scripted step: Claude Code's title and quota requests, Codex's polls of a running command. */
  side?: boolean;
  /** What the answer was: the step's kind (exec, write, say), or poll. */
  kind?: string;
  /** The Host header the agent sent. */
  host?: string | null;
  method?: string;
  path?: string;
  /** Everything that arrived (model-server.mjs records every request whole). */
  received?: ReceivedRequest;
}

/** Where a secret reached the model server, request by request ("#i api step: where"). */
export interface Sightings {
  /** Its raw value anywhere in a request: URL, a header, the body. */
  raw: string[];
  /** Its SHA-256 as a credential header's value: presented as the token. */
  asCredential: string[];
}

/** Searches what the server received for `secret`, raw and as a presented credential. */
export function sightingsOf(requests: ModelRequest[], secret: string): Sightings {
  const hashed = `sha256:${createHash('sha256').update(secret).digest('hex')}`;
  const out: Sightings = { raw: [], asCredential: [] };
  requests.forEach((r, i) => {
    const at = `#${i} ${r.api}${r.step === undefined ? '' : ` step ${r.step}`}`;
    const got = r.received;
    if (!got) return;
    if (got.url.includes(secret)) out.raw.push(`${at}: the URL`);
    for (const [name, value] of Object.entries(got.headers)) {
      const values = Array.isArray(value) ? value : [value];
      if (values.some((v) => v.includes(secret))) out.raw.push(`${at}: header ${name}`);
      if (values.includes(hashed)) out.asCredential.push(`${at}: header ${name}`);
    }
    if (got.body.includes(secret)) out.raw.push(`${at}: the body`);
  });
  return out;
}

export interface ModelServer {
  netns: string;
  /** What sandbox-run / the launcher pass as the network. */
  network: string;
  port: number;
  /** Base URL as seen from inside the namespace (and the container). */
  url: string;
  /** Requests the server answered, without any token value. */
  requests(): Promise<ModelRequest[]>;
  stop(): Promise<void>;
}

export interface ModelServerOptions {
  steps: ScriptStep[];
  /** The canary the agent must present; only its SHA-256 reaches the server's argv. */
  expectedToken: string;
  /** Or its SHA-256 alone (a caller that never holds the canary, e.g. the demo's helper). */
  expectedTokenSha256?: string;
  dir: string;
  port?: number;
  /** Access token handed out by the refresh endpoint. */
  refreshAccessToken?: string;
  /** Speak TLS with this certificate (startModelServer; startApiModelServer always does). */
  tls?: { certFile: string; keyFile: string };
}

/** A started model server: what it received, and how to stop it. */
export interface RunningModelServer {
  requests(): Promise<ModelRequest[]>;
  stop(): Promise<void>;
}

/** Resolves once the server says on stderr that it listens; rejects, with what it said, if it exits first. */
function untilListening(child: ResultPromise): Promise<void> {
  let stderr = '';
  return new Promise<void>((resolve, reject) => {
    // A node start takes well under a second here, several under the VM tier's CPU emulation.
    const timer = setTimeout(() => reject(new Error(`model server did not start within 60 s: ${stderr}`)), 60_000);
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void child.then(() => reject(new Error(`model server exited early: ${stderr}`)));
  });
}

/** Starts model-server.mjs (in `netns`, or where the caller is) with `extra` arguments; resolves once it listens. */
async function spawnServer(
  t: Teardown | undefined,
  netns: string | null,
  options: ModelServerOptions,
  extra: string[],
  onStop: () => Promise<void>,
): Promise<RunningModelServer> {
  const script = path.join(options.dir, 'model-steps.json');
  const record = path.join(options.dir, 'model-requests.jsonl');
  await writeFile(script, JSON.stringify(options.steps));
  await writeFile(record, '');
  let child: ResultPromise | undefined;
  const stop = async () => {
    child?.kill('SIGTERM');
    await child?.catch(() => undefined);
    child = undefined;
    await onStop();
  };
  t?.teardown(stop);
  try {
    const sha = options.expectedTokenSha256 ?? createHash('sha256').update(options.expectedToken).digest('hex');
    const args = [
      process.execPath,
      path.join(repoRoot, 'test/model-server/model-server.mjs'),
      '--script',
      script,
      '--record',
      record,
      '--token-sha256',
      sha,
      ...extra,
    ];
    if (options.refreshAccessToken) args.push('--refresh-access-token', options.refreshAccessToken);
    const [file, ...argv] = netns === null ? args : ['ip', 'netns', 'exec', netns, ...args];
    child = execa(file!, argv, { stdio: ['ignore', 'ignore', 'pipe'], reject: false });
    await untilListening(child);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    requests: async () =>
      (await readFile(record, 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as ModelRequest),
    stop,
  };
}

export async function startModelServer(t: Teardown | undefined, options: ModelServerOptions): Promise<ModelServer> {
  const netns = `asns-${randomBytes(4).toString('hex')}`;
  const port = options.port ?? 8080;
  await execa('ip', ['netns', 'add', netns]);
  const removeNetns = async () => void (await execa('ip', ['netns', 'del', netns], { reject: false }));
  try {
    await execa('ip', ['netns', 'exec', netns, 'ip', 'link', 'set', 'lo', 'up']);
  } catch (err) {
    await removeNetns();
    throw err;
  }
  const tls = options.tls ? ['--tls-cert', options.tls.certFile, '--tls-key', options.tls.keyFile] : [];
  const server = await spawnServer(t, netns, options, ['--port', String(port), ...tls], removeNetns);
  return { netns, network: `ns:/run/netns/${netns}`, port, url: `http://127.0.0.1:${port}`, ...server };
}

export interface ApiModelServer extends RunningModelServer {
  /** The fake internet's host it listens on (v4 and v6, port 443), with its names. */
  host: ExtraHost;
  /** name -> https URL the agent is given (the real API's). */
  urls: Record<string, string>;
}

/** The model server at one of the fake internet's extra hosts, TLS on 443 for all its names. */
export async function startApiModelServer(
  t: Teardown,
  fi: FakeInternet,
  host: ExtraHost,
  options: Omit<ModelServerOptions, 'port'>,
): Promise<ApiModelServer> {
  const extra = ['--port', '443', '--host', host.v4, '--host', host.v6, '--tls-cert', host.tls.certFile, '--tls-key', host.tls.keyFile];
  const server = await spawnServer(t, fi.netns, options, extra, async () => undefined);
  return { ...server, host, urls: Object.fromEntries(host.names.map((n) => [n, `https://${n}`])) };
}

/**
 * The model server on a unix socket, TLS with `tls` (a certificate for the API names): what the
 * API route's relay reaches. A socket file left by a server that is gone is removed first; one
 * a live server holds is an error (one route, one session at a time).
 */
export async function startSocketModelServer(
  t: Teardown,
  socket: string,
  options: ModelServerOptions & { tls: { certFile: string; keyFile: string } },
): Promise<RunningModelServer> {
  if (existsSync(socket)) {
    const live = await new Promise<boolean>((resolve) => {
      const probe = net.connect(socket, () => {
        probe.destroy();
        resolve(true);
      });
      probe.once('error', () => resolve(false));
    });
    if (live) throw new Error(`startSocketModelServer: a server already listens on ${socket}`);
    await unlink(socket);
  }
  const extra = ['--socket', socket, '--tls-cert', options.tls.certFile, '--tls-key', options.tls.keyFile];
  return spawnServer(t, null, options, extra, () => unlink(socket).catch(() => undefined));
}

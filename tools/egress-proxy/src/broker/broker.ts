/**
 * The broker for one session: a unix socket (never TCP) in a private directory, each
 * connection one attempt (see attempt.ts) once admitted (admission.ts: a rate limit and a cap
 * on what is open), a bounded summary kept as attempts end (summary-counter.ts), and a capped,
 * aggregated log (attempt-log.ts). stop() closes the listener, ends every open attempt (each
 * still gets its line), and removes the socket file.
 */
import { chmod, chown, lstat, stat, unlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared/tool-error';
import { validateDocument } from '@agent-sandbox/shared/json-input';
import { EgressProxyConfig, type EgressAttempt, type EgressSummary } from '@agent-sandbox/shared/validators/egress-proxy';
import { parsePolicy, type Policy } from '../rules/allowlist.js';
import type { HostInterfaceAddress } from '../rules/address-policy.js';
import { makeAdmission } from './admission.js';
import { handleAttempt, type AttemptContext } from './attempt.js';
import { brokerLine, countDrops, overflowAnswer } from './overflow.js';
import { AttemptLog, defaultLogLimits, type AttemptWriter } from './attempt-log.js';
import { defaultRateLimit } from './rate-limit.js';
import { SummaryCounter } from './summary-counter.js';
import type { Resolver } from '../rules/decide.js';

export interface BrokerDeps {
  /** Names -> addresses on the host. The tests pass a map; startSessionBroker the system's. */
  resolve: Resolver;
  /** Where each attempt's line goes. */
  write: AttemptWriter;
  /** The host's addresses (default os.networkInterfaces()), read at each attempt. */
  hostInterfaces?: () => HostInterfaceAddress[];
  timeouts?: Partial<{ headMs: number; dialMs: number; resolveMs: number }>;
}

export interface Broker {
  socketPath: string;
  /** The summary so far (attempts that have ended). */
  summary(): EgressSummary;
  /** Resolves when no attempt is open. */
  idle(): Promise<void>;
  /** Stops: no new attempts, open ones ended and logged, socket removed. Same promise when called again. */
  stop(): Promise<EgressSummary>;
}

export const defaultMaxConnections = 512;

let interfaces: { at: number; list: HostInterfaceAddress[] } | undefined;

/**
 * The host's addresses, read again when the last read is over a second old: getifaddrs costs
 * ~0.3 ms here, more than the rest of an attempt's checks, and an address that appears on the
 * host is refused within a second.
 */
export function systemInterfaces(): HostInterfaceAddress[] {
  const now = Date.now();
  if (!interfaces || now - interfaces.at > 1000) {
    interfaces = { at: now, list: Object.values(os.networkInterfaces()).flatMap((list) => list ?? []) };
  }
  return interfaces.list;
}

/** The socket's directory must be private: nobody else may swap the socket for their own. */
async function prepareSocketPath(socketPath: string): Promise<void> {
  const dir = path.dirname(socketPath);
  const info = await lstat(dir).catch(() => undefined);
  if (!info?.isDirectory() || (info.mode & 0o022) !== 0) {
    throw new ToolError(
      'unsafePath',
      'socket-dir-unsafe',
      `socketPath: ${dir} must be an existing directory (not a symlink) that is not group- or world-writable`,
      {
        field: 'socketPath',
      },
    );
  }
  const existing = await lstat(socketPath).catch(() => undefined);
  if (!existing) return;
  if (!existing.isSocket()) {
    throw new ToolError('unsafePath', 'socket-path-taken', `socketPath: ${socketPath} exists and is not a socket`, { field: 'socketPath' });
  }
  const live = await new Promise<boolean>((resolve) => {
    const probe = net.connect(socketPath, () => resolve(true)).once('error', () => resolve(false));
    probe.once('connect', () => probe.destroy());
  });
  if (live)
    throw new ToolError('usage', 'socket-in-use', `socketPath: a process is listening on ${socketPath} already`, { field: 'socketPath' });
  await unlink(socketPath); // a stale socket left by a broker that was killed
}

async function listen(server: net.Server, socketPath: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** What each attempt needs from the broker: its policy, resolver, timeouts, record and socket tracking. */
function attemptContext(
  config: EgressProxyConfig,
  policy: Policy,
  deps: BrokerDeps,
  stopping: AbortController,
  sockets: Set<net.Socket>,
  record: (line: EgressAttempt) => void,
): AttemptContext {
  return {
    session: config.sessionId,
    policy,
    decideDeps: {
      resolve: deps.resolve,
      hostInterfaces: deps.hostInterfaces ?? systemInterfaces,
      resolveTimeoutMs: deps.timeouts?.resolveMs ?? 10_000,
      signal: stopping.signal,
    },
    headTimeoutMs: deps.timeouts?.headMs ?? 30_000,
    dialTimeoutMs: deps.timeouts?.dialMs ?? 10_000,
    record,
    track: (socket: net.Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      if (stopping.signal.aborted) socket.destroy();
    },
  };
}

/** Listens on the config's socket with its mode and owner; returns the socket's inode, so stop removes only a socket that is still ours. */
async function openSocket(server: net.Server, config: EgressProxyConfig): Promise<number> {
  await listen(server, config.socketPath);
  // accept(2) failures (EMFILE under a flood) must not end the broker: the listener stays.
  server.on('error', () => undefined);
  await chmod(config.socketPath, parseInt(config.socketMode ?? '0600', 8));
  if (config.socketOwner) await chown(config.socketPath, config.socketOwner.uid, config.socketOwner.gid);
  return (await stat(config.socketPath)).ino;
}

export async function startBroker(input: EgressProxyConfig, deps: BrokerDeps): Promise<Broker> {
  const config = validateDocument(EgressProxyConfig, input);
  const policy = parsePolicy(config.allow, config.deny);
  await prepareSocketPath(config.socketPath);
  const counter = new SummaryCounter(config.sessionId);
  const log = new AttemptLog(config.sessionId, deps.write, {
    ...defaultLogLimits,
    ...(config.logMaxBytes ? { capBytes: config.logMaxBytes } : {}),
  });
  const rate = config.rate ?? defaultRateLimit;
  const stopping = new AbortController();
  const sockets = new Set<net.Socket>();
  const inFlight = new Set<Promise<void>>();
  const record = (line: EgressAttempt) => (counter.add(line), log.record(line));
  const ctx = attemptContext(config, policy, deps, stopping, sockets, record);
  const max = config.maxConnections ?? defaultMaxConnections;
  const admission = makeAdmission({
    rate,
    max,
    open: () => inFlight.size,
    start: (client) => {
      const attempt = handleAttempt(client, ctx).finally(() => inFlight.delete(attempt));
      inFlight.add(attempt);
    },
    overflow: (client) => {
      record(brokerLine(config.sessionId, 'too-many-connections', 503));
      overflowAnswer(client, max);
    },
  });
  // Paused: a connection waiting for its turn is not read (handleAttempt resumes it).
  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => admission.offer(client));
  const drops = countDrops(server, max, (n) => record(brokerLine(config.sessionId, 'too-many-connections', null, n)));
  const ino = await openSocket(server, config);

  const summary = (): EgressSummary => ({ ...counter.summary(), log: log.state(), rate: { ...rate, delayed: admission.delayed() } });
  const idle = async () => {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  };
  let stopped: Promise<EgressSummary> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      stopping.abort();
      server.close();
      drops.flush();
      const waited = admission.stop();
      if (waited > 0) record(brokerLine(config.sessionId, 'broker-stopped', null, waited));
      for (const socket of sockets) socket.destroy();
      await idle();
      log.close();
      // Remove the socket only if it is still ours (a new broker may have taken the path).
      const now = await stat(config.socketPath).catch(() => undefined);
      if (now?.ino === ino) await unlink(config.socketPath).catch(() => undefined);
      return summary();
    })());
  return { socketPath: config.socketPath, summary, idle, stop };
}

/**
 * A session's network: by default the container stays `--network none` and its only way out is
 * an allowlisting broker (tools/egress-proxy) on a unix socket in a private directory, mounted
 * read-only at /run/sandbox-egress. Inside, socat listens on 127.0.0.1:3128 and forwards
 * to that socket; the agent gets HTTPS_PROXY/HTTP_PROXY/ALL_PROXY pointing at it and NO_PROXY for
 * loopback, passed by name. The broker runs in the launcher's own process, so it dies with the
 * session: a dead broker means no network, never a fallback. `--egress none` keeps a session
 * offline; `--network ns:` joins a namespace the caller made (no broker).
 */
import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { egressAllowlist, socatRelayPrefix, startSessionBroker, type SessionBroker } from '@agent-sandbox/egress-proxy';
import { agentGid, agentUid } from '@agent-sandbox/shared/container-layout';
import type { RuntimeName } from '@agent-sandbox/shared/runtimes';
import type { EgressProxyConfig, EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';
import { describeBounded } from '@agent-sandbox/shared/bounded-list';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import type { CaTrust } from './ca-file.js';
import { runtimeDir } from '../workspace/layout.js';

/** Inside the container. */
export const egressMount = '/run/sandbox-egress';
export const egressSocketName = 'egress.sock';
export const relayPort = 3128;
export const relayListen = `127.0.0.1:${relayPort}`;

export interface EgressPlan {
  /** broker: the default; none: no network at all; namespace: the caller's --network ns:. */
  mode: 'broker' | 'none' | 'namespace';
  allow: string[];
  /** The private directory holding the broker's socket (broker mode). */
  socketDir?: string;
  /** Where the broker writes one JSON line per attempt (broker mode). */
  logPath?: string;
  /** --ca-file, read and checked (any mode: a caller's namespace may hold a TLS proxy too). */
  ca?: CaTrust;
}

/** Where the socket lives: the runtime directory (short paths: a unix socket path has 107 bytes). */
export function egressSocketDir(sessionId: string, euid = process.geteuid?.() ?? 0): string {
  return path.join(runtimeDir(euid), 'agent-sandbox', 'egress', sessionId);
}

export function egressPlanOf(
  request: { runtime: RuntimeName; egress: 'runtime' | 'none'; allowHosts: string[]; network: string; ledgerFile: string },
  sessionId: string,
  runId: string,
  ca?: CaTrust,
): EgressPlan {
  const trust = ca ? { ca } : {};
  if (request.network !== 'none') return { mode: 'namespace', allow: [], ...trust };
  if (request.egress === 'none') return { mode: 'none', allow: [], ...trust };
  return {
    mode: 'broker',
    ...trust,
    allow: [...new Set([...egressAllowlist(request.runtime), ...request.allowHosts])],
    socketDir: egressSocketDir(sessionId),
    logPath: path.join(path.dirname(request.ledgerFile), 'egress', `${sessionId}-${runId}.jsonl`),
  };
}

/** The proxy variables the agent gets, by name (values are loopback URLs, not secrets). */
export function proxyEnv(plan: EgressPlan): Record<string, string> {
  if (plan.mode !== 'broker') return {};
  const url = `http://${relayListen}`;
  const env: Record<string, string> = { HTTPS_PROXY: url, HTTP_PROXY: url, ALL_PROXY: url, NO_PROXY: 'localhost,127.0.0.1,::1' };
  for (const [name, value] of Object.entries(env)) env[name.toLowerCase()] = value;
  return env;
}

/**
 * The relay beside the agent's command: socat started detached, listening before the command is
 * exec'd (tools/egress-proxy/src/relay/socat-relay.ts; the node relay in an image without socat).
 * A connection is a socat process: at most half the session's pids at once, the rest wait.
 */
export function relayPrefix(plan: EgressPlan, pids: number): string[] {
  return plan.mode === 'broker' ? socatRelayPrefix(`${egressMount}/${egressSocketName}`, relayPort, relayChildren(pids)) : [];
}

/** How many connections the relay serves at once: half the session's --pids (the agent keeps the other half). */
export function relayChildren(pids: number): number {
  return Math.max(1, Math.floor(pids / 2));
}

export interface RunningEgress {
  /** Stops the broker; the summary of what was reached and refused. Idempotent. */
  stop(): Promise<EgressSummary | undefined>;
}

/**
 * The socket directory (broker mode): root-owned 0711 when the launcher is root (the socket
 * itself belongs to the container's uid), the launcher's own 0700 otherwise (rootless keep-id
 * maps it to the agent). Made afresh: nothing of an earlier session's stays in it.
 */
export function makeSocketDir(socketDir: string): void {
  const root = (process.geteuid?.() ?? 0) === 0;
  rmSync(socketDir, { recursive: true, force: true });
  mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  chmodSync(socketDir, root ? 0o711 : 0o700);
  if (root) chownSync(socketDir, 0, 0);
}

/** The broker's config for the session: the same for the launcher's own and a kube node's. */
export function brokerConfig(plan: EgressPlan, sessionId: string): EgressProxyConfig | undefined {
  if (plan.mode !== 'broker' || !plan.socketDir) return undefined;
  const root = (process.geteuid?.() ?? 0) === 0;
  return {
    socketPath: path.join(plan.socketDir, egressSocketName),
    sessionId,
    allow: plan.allow,
    ...(root ? { socketOwner: { uid: agentUid, gid: agentGid } } : {}),
  };
}

/** Starts the session's broker (broker mode), in this process: it dies with the launcher. */
export async function startEgress(plan: EgressPlan, sessionId: string): Promise<RunningEgress> {
  const config = brokerConfig(plan, sessionId);
  if (!config || !plan.socketDir || !plan.logPath) return { stop: async () => undefined };
  makeSocketDir(plan.socketDir);
  mkdirSync(path.dirname(plan.logPath), { recursive: true, mode: 0o700 });
  let broker: SessionBroker;
  try {
    broker = await startSessionBroker({ ...config, logPath: plan.logPath });
  } catch (err) {
    rmSync(plan.socketDir, { recursive: true, force: true });
    throw err;
  }
  let stopped: Promise<EgressSummary> | undefined;
  return {
    stop: () => (stopped ??= broker.stop().finally(() => rmSync(plan.socketDir!, { recursive: true, force: true }))),
  };
}

/**
 * What stderr says after a session that flooded its broker (it was paced, refused past the
 * cap, or filled its log): the refused names the summary keeps (at most 20, made safe to print:
 * the session chose them), then a count. A session that was not flooding gets no line.
 */
export function describeEgress(summary: EgressSummary | undefined): string[] {
  if (!summary) return [];
  const paced = summary.rate?.delayed ?? 0;
  const over = summary.refused.find((r) => r.rule === 'too-many-connections')?.count ?? 0;
  if (paced === 0 && over === 0 && !summary.log?.capped) return [];
  const named = summary.refused.filter((r) => r.host !== null).map((r) => `${forTerminal(r.host!)}:${r.port} ${r.rule} x${r.count}`);
  const others = summary.others?.refused.rows ?? 0;
  const lines = [
    `agent-sandbox: egress: ${summary.denied + summary.failed} of ${summary.attempts} attempts refused or failed${named.length > 0 ? `: ${describeBounded({ named, others }, 'other rows')}` : ''}`,
  ];
  if (paced > 0)
    lines.push(
      `agent-sandbox: egress: ${paced} attempts waited for the rate limit (${summary.rate!.perSecond}/s, ${summary.rate!.burst} at once)`,
    );
  if (over > 0)
    lines.push(`agent-sandbox: egress: ${over} connections were refused unread: the broker had as many open or waiting as it takes`);
  if (summary.log?.capped)
    lines.push(
      `agent-sandbox: egress: the attempt log reached its cap (${summary.log.capBytes} bytes); ${summary.log.droppedLines} more lines were only counted`,
    );
  return lines;
}

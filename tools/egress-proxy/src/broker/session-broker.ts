/**
 * What the launcher calls: a broker for one session with the host's own resolver and the
 * config's log file. The resolver is fixed here, in the host process; nothing in the config,
 * and nothing the session can reach, chooses another.
 */
import { lookup } from 'node:dns/promises';
import { resolverEnvironment } from '@agent-sandbox/shared/podman-pin';
import type { EgressProxyConfig, EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';
import { openAttemptLog } from './attempt-log.js';
import { startBroker, type Broker, type BrokerDeps } from './broker.js';
import type { Resolver } from '../rules/decide.js';

/** The host's resolver (getaddrinfo: /etc/hosts, then DNS), every address in its order. */
export const systemResolver: Resolver = async (name) => (await lookup(name, { all: true, verbatim: true })).map((a) => a.address);

export { resolverEnvironment };

export interface SessionBroker extends Broker {
  /** Stops the broker, closes the log, and returns the session's egress summary. */
  stop(): Promise<EgressSummary>;
}

/** Starts the broker for one session: lines appended to config.logPath (or fd 1). */
export async function startSessionBroker(config: EgressProxyConfig, options: Pick<BrokerDeps, 'timeouts'> = {}): Promise<SessionBroker> {
  const log = openAttemptLog(config.logPath);
  let broker: Broker;
  try {
    broker = await startBroker(config, { resolve: systemResolver, write: log.write, ...options });
  } catch (err) {
    log.close();
    throw err;
  }
  let stopped: Promise<EgressSummary> | undefined;
  return {
    ...broker,
    stop: () => (stopped ??= broker.stop().finally(() => log.close())),
  };
}

/**
 * startSessionBroker as other packages get it: the broker's modules load on the first call.
 * The launcher imports this package at every start for its allowlists, and loading the broker
 * (net, dns, its address lists) costs a start 9-15 ms here, which only a session with a broker
 * needs. (In this package, cli.ts imports session-broker.ts itself.)
 */
import type { SessionBroker, startSessionBroker as start } from './session-broker.js';

export async function startSessionBroker(...args: Parameters<typeof start>): Promise<SessionBroker> {
  const broker = await import('./session-broker.js');
  return await broker.startSessionBroker(...args);
}

/**
 * One attempt's decision, before anything is dialed: the name rules, then the name resolved
 * on the host (by the resolver the caller passed in), then every address checked. Every
 * address the name resolves to must pass: a name that also resolves to an internal address
 * is refused rather than dialed at its public one (DNS rebinding gets no foothold).
 */
import { decideTarget, hostText, type Policy, type Target } from './allowlist.js';
import { refuseAddress, type HostInterfaceAddress } from './address-policy.js';

/** Names -> addresses, on the host. Injected: the tests pass a map, the CLI the system's. */
export type Resolver = (name: string) => Promise<string[]>;

export type Decision =
  | { decision: 'allowed'; rule: 'allowlisted'; entry: string; addresses: string[] }
  | { decision: 'denied'; rule: string; entry: string | null; address: string | null; message: string };

export interface DecideDeps {
  resolve: Resolver;
  hostInterfaces: () => HostInterfaceAddress[];
  resolveTimeoutMs: number;
  /** Aborted when the broker stops: a pending resolution is given up. */
  signal: AbortSignal;
}

async function resolveWithin(resolve: Resolver, name: string, ms: number, signal: AbortSignal): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    onAbort = () => reject(new Error('the broker is stopping'));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([resolve(name), timeout]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

const nameReasons: Record<string, string> = {
  'not-allowlisted': "is not on the session's allowlist",
  denylisted: 'is on the denylist',
  'bad-port': "is on the session's allowlist for other ports only",
};

export async function decide(policy: Policy, target: Target, deps: DecideDeps): Promise<Decision> {
  const shown = `${hostText(target.host)}:${target.port}`;
  const named = decideTarget(policy, target);
  if (named.decision === 'denied') {
    return { ...named, address: null, message: `${shown} ${nameReasons[named.rule]}${named.entry ? ` (${named.entry})` : ''}` };
  }
  let addresses: string[];
  if (target.host.kind === 'name') {
    try {
      addresses = await resolveWithin(deps.resolve, target.host.text, deps.resolveTimeoutMs, deps.signal);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      const rule = deps.signal.aborted ? 'broker-stopped' : 'resolve-failed';
      return { decision: 'denied', rule, entry: named.entry, address: null, message: `${target.host.text} did not resolve: ${why}` };
    }
    if (addresses.length === 0) {
      return {
        decision: 'denied',
        rule: 'resolve-failed',
        entry: named.entry,
        address: null,
        message: `${target.host.text} has no addresses`,
      };
    }
  } else {
    addresses = [target.host.text];
  }
  const host = deps.hostInterfaces();
  for (const address of addresses) {
    const rule = refuseAddress(address, host);
    if (rule) {
      const how = target.host.kind === 'name' ? `resolves to ${address}, refused as ${rule}` : `is refused as ${rule}`;
      return { decision: 'denied', rule, entry: named.entry, address, message: `${shown} ${how}` };
    }
  }
  return { decision: 'allowed', rule: 'allowlisted', entry: named.entry, addresses };
}

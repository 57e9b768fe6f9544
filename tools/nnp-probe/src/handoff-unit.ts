/**
 * Recursion detection. The handoff runs the command in a transient unit named
 * `agent-sandbox-nnp-<16 hex>.service`; a process inside it sees that name in
 * /proc/self/cgroup. The cgroup is set by the service manager, not by the caller's
 * environment, so no variable can claim (or deny) that we are already inside.
 */
import { randomBytes } from 'node:crypto';

export const unitPrefix = 'agent-sandbox-nnp-';
const unitPattern = /^agent-sandbox-nnp-[0-9a-f]{16}\.service$/;

/** A fresh unit name for one handoff. */
export function newUnitName(): string {
  return `${unitPrefix}${randomBytes(8).toString('hex')}.service`;
}

/** The handoff unit named in a /proc/<pid>/cgroup text ("N:controllers:/path" lines), or null. */
export function findHandoffUnit(cgroupText: string): string | null {
  for (const line of cgroupText.split('\n')) {
    const path = line.split(':').slice(2).join(':');
    const unit = path.split('/').find((part) => unitPattern.test(part));
    if (unit) return unit;
  }
  return null;
}

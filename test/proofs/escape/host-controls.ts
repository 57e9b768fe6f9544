// Controls run on the host, outside every boundary, for attempts whose refusal inside could
// come from something else than the boundary they name: the same raw system call (sc.pl) as
// root with a capability, and with that capability dropped (setpriv); the setuid-root plant
// run as the agent's uid without NoNewPrivs; the host's dmesg_restrict, which decides whether
// an unprivileged reader may read the kernel log at all. Rootless, the user's own namespaces
// stand in for root (scOnHost).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { agentUid, helperDir, patience, rootful } from './session-kit.js';

/**
 * `sc.pl LABEL NR ARG...` on the host as root, with or without capabilities (e.g. 'net_raw').
 * A rootless launcher's user has no capability on the host: its control is root in a user and
 * network namespace of its own (unshare -Urn), where the mapped root holds every capability over
 * that network namespace, as the session's user namespace would were its capabilities not dropped.
 */
export async function scOnHost(call: string[], without?: string | string[]): Promise<string> {
  const caps =
    without === undefined
      ? ''
      : [without]
          .flat()
          .map((c) => `-${c}`)
          .join(',');
  const drop = caps ? ['setpriv', `--inh-caps=${caps}`, `--bounding-set=${caps}`] : [];
  const userns = rootful ? [] : ['unshare', '-Urn'];
  const [cmd, ...args] = [...userns, ...drop, 'perl', path.join(helperDir, 'sc.pl'), ...call];
  const out = await execa(cmd!, args, { reject: false, timeout: 30_000 * patience });
  return String(out.stdout).trim();
}

/** Runs the planted binary (a setuid-root perl) as the agent's uid on the host, no NoNewPrivs: its euid. */
export async function plantEuidOnHost(plant: string): Promise<string> {
  const out = await execa(
    'setpriv',
    ['--reuid', String(agentUid), '--regid', String(agentUid), '--clear-groups', plant, '-e', 'print "euid=$> uid=$<"'],
    { reject: false, timeout: 30_000 * patience, cwd: '/' },
  );
  return String(out.stdout).trim();
}

export const dmesgRestrict = () => readFileSync('/proc/sys/kernel/dmesg_restrict', 'utf8').trim();

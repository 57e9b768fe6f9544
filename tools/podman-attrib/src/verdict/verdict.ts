/**
 * The decision, pure: from the exit status and the evidence gathered, which
 * reason and why. Order: a start failure, then an OOM kill, then a pids-limit
 * hit (reported even when the agent survived it), then death by signal, else
 * a plain exit. The exit status itself is never changed.
 */
import { constants } from 'node:os';
import type { EndReason } from '@agent-sandbox/shared/schemas/podman-attrib';
import type { Counters } from '../cgroup/counters.js';
import { descendantPidsKey } from '../cgroup/event-watch.js';
import type { KernelFindings } from './kernel-log.js';
import type { PodmanEventLine } from './event-log.js';

/** podman's own statuses: 125 podman failed, 126 command not executable, 127 command not found. */
export const podmanStartStatuses = [125, 126, 127] as const;

export interface VerdictInput {
  exitCode: number;
  kernel?: KernelFindings | undefined;
  counters: Counters;
  /** Events of this container; undefined when the log was not readable. */
  events?: PodmanEventLine[] | undefined;
  stderrTail?: string | undefined;
  /** True when inspect says the container never ran (status "created", no start time). */
  neverStarted?: boolean;
  inspectOomKilled?: boolean;
}

export interface Verdict {
  reason: EndReason;
  basis: string;
  signal?: string;
}

/** "SIGKILL" for 137; undefined when the status is not 128+n of a known signal. */
export function signalOfStatus(status: number): string | undefined {
  if (status <= 128 || status > 128 + 64) return undefined;
  const n = status - 128;
  return Object.entries(constants.signals).find(([, v]) => v === n)?.[0];
}

/** podman's own error line in the stderr tail ("Error: ..."), if any. */
export function podmanErrorLine(stderrTail: string | undefined): string | undefined {
  return stderrTail
    ?.split('\n')
    .reverse()
    .find((l) => /^Error: /.test(l.trim()))
    ?.trim();
}

function startFailure(input: VerdictInput): string | undefined {
  if (input.neverStarted) return `inspect: the container never ran (status created, no start time)`;
  if (!(podmanStartStatuses as readonly number[]).includes(input.exitCode)) return undefined;
  const ran = input.events?.some((e) => e.status === 'died' || e.status === 'start');
  if (ran) return undefined; // the contained command itself returned 125..127
  const line = podmanErrorLine(input.stderrTail);
  if (line) return `podman status ${input.exitCode} with ${line}`;
  if (input.events !== undefined) return `podman status ${input.exitCode} and the event log has no start or died event for the container`;
  return undefined;
}

function counter(counters: Counters, key: string): number {
  return counters[key] ?? 0;
}

export function decide(input: VerdictInput): Verdict {
  const started = startFailure(input);
  if (started) return { reason: 'start-failed', basis: started };
  const { counters } = input;
  const oomLine = input.kernel?.oomKills[0];
  if (oomLine) return { reason: 'oom-killed', basis: `kernel log: ${oomLine}` };
  for (const key of ['memory.events:oom_kill', 'memory.oom_control:oom_kill']) {
    if (counter(counters, key) > 0) return { reason: 'oom-killed', basis: `cgroup counter ${key} = ${counters[key]}` };
  }
  if (input.inspectOomKilled) return { reason: 'oom-killed', basis: 'inspect: State.OOMKilled true' };
  const pidsLine = input.kernel?.pidsRejections[0];
  if (pidsLine) return { reason: 'pids-limit', basis: `kernel log: ${pidsLine}` };
  if (counter(counters, 'pids.events:max') > 0) {
    return { reason: 'pids-limit', basis: `cgroup counter pids.events:max = ${counters['pids.events:max']}` };
  }
  if (counter(counters, descendantPidsKey) > 0) {
    return {
      reason: 'pids-limit',
      basis: `cgroup counter pids.events:max = ${counters[descendantPidsKey]} in the container's own cgroup, read while it ran`,
    };
  }
  const signal = signalOfStatus(input.exitCode);
  if (signal) return { reason: 'signal', basis: `exit status ${input.exitCode} = 128 + ${signal}`, signal };
  return { reason: 'exited', basis: `exit status ${input.exitCode}` };
}

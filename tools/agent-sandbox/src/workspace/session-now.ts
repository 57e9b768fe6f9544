/**
 * A running session now, against each of its ceilings, read only from what it already keeps:
 * its record (identity, limits, the disk watch's last walk, the broker's log path), its parent
 * cgroup's current counters (one read of a few files), and its broker's attempt log (counted
 * here, at most its 8 MiB cap). Nothing is asked of the launcher or the container, so a session
 * pays nothing for being listed; the disk figures are as of its launcher's last walk.
 */
import { cgroupLayout, parentFromArg, sampleNow } from '@agent-sandbox/podman-attrib';
import { parseSize } from '@agent-sandbox/shared/limits';
import type { Peak } from '@agent-sandbox/shared/schemas/podman-attrib';
import type { PsLine } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { readPlainBounded } from '@agent-sandbox/mount-plan';
import { defaultLogLimits } from '@agent-sandbox/egress-proxy';
import type { RunningSession } from './running.js';

/** The attempt log's cap: reading more is never needed. */
const attemptLogCapBytes = defaultLogLimits.capBytes;

/** Attempts allowed and refused (denied or failed) so far, from the broker's attempt log. */
export function countAttempts(text: string): { reached: number; refused: number } {
  let reached = 0;
  let refused = 0;
  for (const raw of text.split('\n')) {
    if (!raw.startsWith('{')) continue;
    try {
      const line = JSON.parse(raw) as { decision?: string; count?: number };
      const n = typeof line.count === 'number' ? line.count : 1;
      if (line.decision === 'allowed') reached += n;
      else if (line.decision === 'denied' || line.decision === 'failed') refused += n;
    } catch {
      // the last line may be half written
    }
  }
  return { reached, refused };
}

function egressNow(record: RunningSession['record']): PsLine['egress'] {
  if (!record.egress) return { mode: 'unknown', reached: null, refused: null };
  if (!record.egress.log) return { mode: record.egress.mode, reached: null, refused: null };
  const text = readPlainBounded(record.egress.log, attemptLogCapBytes)?.toString('utf8');
  return { mode: 'broker', ...(text === undefined ? { reached: 0, refused: 0 } : countAttempts(text)) };
}

function cgroupNow(record: RunningSession['record']): Peak {
  if (!record.cgroupParent) return { memoryBytes: null, pids: null, cpuSeconds: null };
  try {
    return sampleNow(cgroupLayout(parentFromArg(record.cgroupParent).relPath));
  } catch {
    return { memoryBytes: null, pids: null, cpuSeconds: null };
  }
}

const sizeOrNull = (flag: string, value: string | undefined) => {
  try {
    return value === undefined ? null : parseSize(flag, value);
  } catch {
    return null;
  }
};

export function sessionNow({ layout, record }: RunningSession, now = Date.now()): PsLine {
  const limits = record.line.limits;
  const uptimeSeconds = Math.max(0, Math.round((now - Date.parse(record.startedAt)) / 1000));
  const usage = cgroupNow(record);
  const disk = record.disk;
  return {
    workspace: layout.sessionId,
    runId: record.runId,
    runtime: record.line.runtime,
    host: record.host,
    mode: record.mode,
    user: record.user,
    launcherPid: record.pid,
    container: record.containerName,
    startedAt: record.startedAt,
    uptimeSeconds,
    memory: { bytes: usage.memoryBytes, limitBytes: sizeOrNull('--memory', limits?.memory) },
    pids: { current: usage.pids, limit: limits?.pids ?? null },
    cpu: {
      seconds: usage.cpuSeconds === null ? null : Math.round(usage.cpuSeconds * 100) / 100,
      average: usage.cpuSeconds === null || uptimeSeconds === 0 ? null : Math.round((usage.cpuSeconds / uptimeSeconds) * 1000) / 1000,
      limit: limits?.cpus ?? null,
    },
    disk: {
      bytes: disk?.bytes ?? null,
      files: disk?.files ?? null,
      limitBytes: disk?.limitBytes ?? sizeOrNull('--disk', limits?.disk),
      limitFiles: disk?.limitFiles ?? null,
      asOf: disk?.at ?? null,
    },
    egress: egressNow(record),
    published: record.published ?? [],
  };
}

/**
 * Reads the counters of the session's parent cgroup, which survive the
 * container's own cgroup. Measured on this kernel (6.18, cgroup v1 hybrid):
 * the parent keeps memory.max_usage_in_bytes, pids.peak and cpuacct.usage for
 * its removed children, but its memory.failcnt, memory.oom_control oom_kill and
 * pids.events stay 0 (v1 counts those events only in the cgroup that hit the
 * limit). On cgroup v2 memory.events/pids.events of a parent count descendants.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Peak } from '@agent-sandbox/shared/schemas/podman-attrib';
import type { CgroupLayout } from './cgroup-tree.js';

export type Counters = Record<string, number>;

/** "key value" lines (memory.events, cpu.stat, memory.oom_control, pids.events). */
export function parseKeyed(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined && /^\d+$/.test(value)) out[key] = Number(value);
  }
  return out;
}

function readNumber(file: string): number | undefined {
  try {
    const text = readFileSync(file, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : undefined;
  } catch {
    return undefined;
  }
}

function readKeyed(file: string): Record<string, number> | undefined {
  try {
    return parseKeyed(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

interface FileSpec {
  dir: keyof CgroupLayout['dirs'];
  file: string;
  /** Keys to take from a keyed file; absent for a single-number file. */
  keys?: string[];
}

const v1Files: FileSpec[] = [
  { dir: 'memory', file: 'memory.max_usage_in_bytes' },
  { dir: 'memory', file: 'memory.failcnt' },
  { dir: 'memory', file: 'memory.memsw.failcnt' },
  { dir: 'memory', file: 'memory.oom_control', keys: ['oom_kill'] },
  { dir: 'pids', file: 'pids.peak' },
  { dir: 'pids', file: 'pids.events', keys: ['max'] },
  { dir: 'cpuacct', file: 'cpuacct.usage' },
];

const v2Files: FileSpec[] = [
  { dir: 'memory', file: 'memory.peak' },
  { dir: 'memory', file: 'memory.events', keys: ['max', 'oom', 'oom_kill'] },
  { dir: 'pids', file: 'pids.peak' },
  { dir: 'pids', file: 'pids.events', keys: ['max'] },
  { dir: 'cpu', file: 'cpu.stat', keys: ['usage_usec'] },
];

function readSpec(dirs: CgroupLayout['dirs'], sub: string, spec: FileSpec, prefix: string, into: Counters): void {
  const file = path.join(dirs[spec.dir], sub, spec.file);
  if (!spec.keys) {
    const value = readNumber(file);
    if (value !== undefined) into[`${prefix}${spec.file}`] = value;
    return;
  }
  const keyed = readKeyed(file);
  for (const key of spec.keys) {
    if (keyed?.[key] !== undefined) into[`${prefix}${spec.file}:${key}`] = keyed[key];
  }
}

/** Every counter of the parent and of podman's `conmon` child that exists here. */
export function readCounters(layout: CgroupLayout): Counters {
  const files = layout.mode === 'v2' ? v2Files : v1Files;
  const counters: Counters = {};
  for (const spec of files) readSpec(layout.dirs, '', spec, '', counters);
  for (const spec of files) readSpec(layout.dirs, 'conmon', spec, 'conmon/', counters);
  return counters;
}

/** The counter key the event watch sets when conmon ran in a scope of its own inside the parent (systemd's form). */
export const conmonScopeKey = 'descendants/conmon-scope';

/** conmon's own task count while the container runs (measured here: 1 task, about 0.9 MB). */
export const conmonSteadyPids = 1;

/**
 * The session's pids peak. The parent's pids.peak also counts conmon, podman's monitor, which
 * podman starts outside the session and then moves in: a move is not a fork, and the kernel
 * checks a limit only on fork and clone, so conmon is counted without ever being refused. Two
 * forms:
 * - a `conmon` child cgroup (cgroupfs): it peaks during container setup (runc's Go threads: 9
 *   to 14 here) while the container holds one task. When the parent's peak is above what setup
 *   alone reached, it came from the container: subtract conmon's steady task. Otherwise the
 *   setup peak hides the container's: use the sampled container count, and never less than
 *   parent minus conmon peaks.
 * - conmon's own scope beside the container's in a systemd slice (`libpod-conmon-<id>.scope`,
 *   seen by the watch while it ran; systemd removes it with conmon): measured in the VM tier's
 *   guest, the slice peaked at 65 under --pids 64 while the container's own cgroup peaked at 64
 *   and conmon's scope held 1 task (3 during setup). Subtract conmon's steady task.
 */
export function pidsPeak(counters: Counters, sampledContainerPids: number | null | undefined): number | null {
  const parent = counters['pids.peak'];
  if (parent === undefined) return sampledContainerPids ?? null;
  if (counters[conmonScopeKey]) return Math.max(parent - conmonSteadyPids, sampledContainerPids ?? 1, 1);
  const conmon = counters['conmon/pids.peak'];
  if (conmon === undefined) return parent;
  if (parent - conmonSteadyPids > conmon) return parent - conmonSteadyPids;
  return Math.max(sampledContainerPids ?? 1, parent - conmon, 1);
}

/** What peak.pids counted, in words, for the evidence beside it. */
export function pidsPeakBasis(counters: Counters): string {
  if (counters['pids.peak'] === undefined) return "the launcher's samples of the container's tasks (no pids.peak survived)";
  if (counters[conmonScopeKey])
    return "the session parent's pids.peak less conmon's one task (conmon ran in its own scope in the parent: moved in, never forked there)";
  if (counters['conmon/pids.peak'] !== undefined)
    return "the session parent's pids.peak less conmon's child cgroup (or the sample, where conmon's setup peak hid the container's)";
  return "the session parent's pids.peak";
}

/**
 * Peaks from the surviving counters. Memory is the parent's own peak
 * (container + conmon's ~0.9 MB: measured 1.2% above the container's own
 * counter for a 64 MiB workload); conmon's memory peak comes during setup and
 * is not simultaneous with the container's, so subtracting it would
 * undercount (measured 13% under). CPU is cumulative, so conmon's share is
 * subtracted exactly. Pids: see pidsPeak.
 */
export function peakFromCounters(counters: Counters, mode: CgroupLayout['mode'], sampled?: Peak): Peak {
  const memoryBytes = counters[mode === 'v2' ? 'memory.peak' : 'memory.max_usage_in_bytes'] ?? sampled?.memoryBytes ?? null;
  const pids = pidsPeak(counters, sampled?.pids);
  const cpuNs =
    mode === 'v2'
      ? counters['cpu.stat:usage_usec'] === undefined
        ? undefined
        : (counters['cpu.stat:usage_usec'] - (counters['conmon/cpu.stat:usage_usec'] ?? 0)) * 1000
      : counters['cpuacct.usage'] === undefined
        ? undefined
        : counters['cpuacct.usage'] - (counters['conmon/cpuacct.usage'] ?? 0);
  return {
    memoryBytes,
    pids,
    cpuSeconds: cpuNs === undefined ? (sampled?.cpuSeconds ?? null) : Math.round(cpuNs / 1e6) / 1e3,
  };
}

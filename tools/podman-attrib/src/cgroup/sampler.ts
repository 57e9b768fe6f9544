/**
 * Samples the parent cgroup's current usage, for peaks only where the kernel
 * keeps no peak file (memory.peak before Linux 5.19, pids.peak before 6.1),
 * and for the container's task count when conmon's setup peak hides it.
 * Never the verdict: a fast OOM dies between samples.
 */
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Peak } from '@agent-sandbox/shared/schemas/podman-attrib';
import { cgroupLayout, conmonCgroupForm, type CgroupLayout } from './cgroup-tree.js';
import { parseKeyed } from './counters.js';

function readNumber(file: string): number | null {
  try {
    const text = readFileSync(file, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

function cpuSeconds(layout: CgroupLayout): number | null {
  if (layout.mode === 'v2') {
    try {
      const usec = parseKeyed(readFileSync(path.join(layout.dirs.cpu, 'cpu.stat'), 'utf8'))['usage_usec'];
      return usec === undefined ? null : usec / 1e6;
    } catch {
      return null;
    }
  }
  const ns = readNumber(path.join(layout.dirs.cpuacct, 'cpuacct.usage'));
  return ns === null ? null : ns / 1e9;
}

/**
 * conmon's tasks in the parent now, in either form podman gives it: a `conmon` child cgroup
 * (cgroupfs) or a scope of its own beside the container's (systemd: `libpod-conmon-<id>.scope`).
 * Measured in the VM tier's guest under systemd: at the bomb's peak the slice held 65 tasks,
 * the container's cgroup 64 (its limit) and conmon's scope 1, conmon itself. Podman moves conmon
 * in; it never forked there.
 */
export function conmonTasks(layout: CgroupLayout): number {
  let tasks = 0;
  let names: string[];
  try {
    names = readdirSync(layout.dirs.pids);
  } catch {
    return 0;
  }
  for (const name of names) if (conmonCgroupForm(name)) tasks += readNumber(path.join(layout.dirs.pids, name, 'pids.current')) ?? 0;
  return tasks;
}

/** One sample now: the parent's memory and CPU, and the container's tasks (parent minus conmon). */
export function sampleNow(layout: CgroupLayout): Peak {
  const memoryFile = layout.mode === 'v2' ? 'memory.current' : 'memory.usage_in_bytes';
  const parentPids = readNumber(path.join(layout.dirs.pids, 'pids.current'));
  const conmonPids = parentPids === null ? 0 : conmonTasks(layout);
  return {
    memoryBytes: readNumber(path.join(layout.dirs.memory, memoryFile)),
    pids: parentPids === null ? null : Math.max(0, parentPids - conmonPids),
    cpuSeconds: cpuSeconds(layout),
  };
}

export interface Sampler {
  stop(): Promise<Peak>;
}

/** Linux 6.1 and later keep pids.peak (v1 and v2) and memory.peak (v2, 5.19); v1 always kept memory.max_usage_in_bytes. */
export function kernelKeepsPeaks(release = os.release()): boolean {
  const [major = 0, minor = 0] = release.split('.').map((n) => parseInt(n, 10));
  return major > 6 || (major === 6 && minor >= 1);
}

/**
 * How often to sample: every 200 ms where a peak exists only as samples (a kernel before 6.1),
 * every 5 s where the kernel keeps the peaks. Then a sample only refines the one figure a peak
 * file cannot give, the container's tasks while they stay under conmon's setup peak (pidsPeak:
 * at most about 14 tasks), and a figure that small is a detail, not a ceiling: a slow sample
 * costs a quiet session next to nothing (docs/performance.md, "What the launcher watches").
 */
export function samplerIntervalMs(release?: string): number {
  return kernelKeepsPeaks(release) ? 5000 : 200;
}

/** Starts sampling the parent (by its --cgroup-parent path, or a layout from prepareAttribution). */
export function startSampler(options: { cgroupParent?: string; layout?: CgroupLayout; intervalMs?: number }): Sampler {
  const layout = options.layout ?? cgroupLayout(options.cgroupParent ?? '');
  if (!options.layout && !options.cgroupParent) throw new TypeError('startSampler: give cgroupParent or layout');
  let peak: Peak = { memoryBytes: null, pids: null, cpuSeconds: null };
  const take = () => {
    const now = sampleNow(layout);
    const max = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));
    peak = {
      memoryBytes: max(peak.memoryBytes, now.memoryBytes),
      pids: max(peak.pids, now.pids),
      cpuSeconds: max(peak.cpuSeconds, now.cpuSeconds),
    };
  };
  take();
  const timer = setInterval(take, options.intervalMs ?? samplerIntervalMs());
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      take();
      return peak;
    },
  };
}

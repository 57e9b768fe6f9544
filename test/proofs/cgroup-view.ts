// The cgroup files a ceiling proof reads, as the container sees them and as the host does, on
// either cgroup version: v1 (our machines: one hierarchy per controller under /sys/fs/cgroup)
// or v2 (the VM tier's guest: one hierarchy, the container's own cgroup at /sys/fs/cgroup
// inside through its cgroup namespace). The scripts use shell builtins only (`read`), so they
// keep working at a pids ceiling.
import { cgroupMode } from '@agent-sandbox/shared';

export const v2 = cgroupMode() === 'v2';
const inside = (v1Dir: string, file: string) => (v2 ? `/sys/fs/cgroup/${file}` : `/sys/fs/cgroup/${v1Dir}/${file}`);

/** Inside the container. */
export const files = {
  pidsCurrent: inside('pids', 'pids.current'),
  pidsEvents: inside('pids', 'pids.events'),
  pidsMax: inside('pids', 'pids.max'),
};

/** Shell that prints "limit=<bytes> swap=<bytes of swap beyond memory>" for the memory limit inside. */
export const memoryLimitScript = v2
  ? 'echo "limit=$(cat /sys/fs/cgroup/memory.max) swap=$(cat /sys/fs/cgroup/memory.swap.max)"'
  : 'l=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); s=$(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes); echo "limit=$l swap=$((s - l))"';

/** bash lines setting $quota and $period (microseconds) from the CPU limit inside. */
export const cpuQuotaScript = v2
  ? 'read quota period < /sys/fs/cgroup/cpu.max'
  : 'read quota < /sys/fs/cgroup/cpu/cpu.cfs_quota_us; read period < /sys/fs/cgroup/cpu/cpu.cfs_period_us';

/** A bash line that sets $<variable> to the container's CPU usage in nanoseconds. */
export function cpuUsageScript(variable: string): string {
  return v2
    ? `while read k v; do [ "$k" = usage_usec ] && ${variable}=\${v}000; done < /sys/fs/cgroup/cpu.stat`
    : `read ${variable} < /sys/fs/cgroup/cpuacct/cpuacct.usage`;
}

/** On the host, in the container's cgroup directory: its CPU usage in nanoseconds. */
export function hostCpuUsage(text: string): number {
  if (!v2) return Number(text.trim());
  return Number(/^usage_usec (\d+)$/m.exec(text)?.[1] ?? NaN) * 1000;
}
export const hostCpuFile = v2 ? 'cpu.stat' : 'cpuacct.usage';
/** The hierarchy holding CPU usage on v1. */
export const cpuController = v2 ? 'cpu' : 'cpuacct';

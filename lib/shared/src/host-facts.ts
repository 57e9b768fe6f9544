/**
 * Facts about this host that several tools need, read from /proc and /sys
 * directly (cheap; `podman info` costs a process and ~0.1 s).
 */
import { existsSync, readFileSync } from 'node:fs';

export type CgroupMode = 'v2' | 'v1' | 'hybrid';

/** cgroup v2 when /sys/fs/cgroup is the unified hierarchy; hybrid when v1 has a unified mount beside it. */
export function cgroupMode(sysFsCgroup = '/sys/fs/cgroup'): CgroupMode {
  if (existsSync(`${sysFsCgroup}/cgroup.controllers`)) return 'v2';
  return existsSync(`${sysFsCgroup}/unified/cgroup.controllers`) ? 'hybrid' : 'v1';
}

/**
 * The OCI runtime that can start containers here. crun refuses cgroup v1/hybrid
 * ("cgroups in hybrid mode not supported"), so on v1 we name runc explicitly.
 * Returns undefined to mean "podman's default".
 */
export function ociRuntime(mode: CgroupMode = cgroupMode()): string | undefined {
  return mode === 'v2' ? undefined : 'runc';
}

/** Global podman arguments that every podman call here needs (before the subcommand). */
export function podmanGlobalArgs(mode: CgroupMode = cgroupMode()): string[] {
  const runtime = ociRuntime(mode);
  return runtime ? ['--runtime', runtime] : [];
}

/** Reads one "Key:\tvalue" line of a /proc status file. */
export function procStatusField(field: string, statusText = readFileSync('/proc/self/status', 'utf8')): string | undefined {
  const line = statusText.split('\n').find((l) => l.startsWith(`${field}:`));
  return line?.slice(field.length + 1).trim();
}

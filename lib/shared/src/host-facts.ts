/**
 * Facts about this host that several tools need, read from /proc and /sys
 * directly (cheap; `podman info` costs a process and ~0.1 s).
 */
import { existsSync, readFileSync } from 'node:fs';

/** This machine's identity (systemd's machine-id): what a hosts registry and a node's receiver name it by. */
export const machineIdFile = '/etc/machine-id';

export type CgroupMode = 'v2' | 'v1' | 'hybrid';

/** Who makes podman's cgroups: systemd (through its bus, cgroups are units) or podman itself. */
export type CgroupManager = 'systemd' | 'cgroupfs';

/** cgroup v2 when /sys/fs/cgroup is the unified hierarchy; hybrid when v1 has a unified mount beside it. */
export function cgroupMode(sysFsCgroup = '/sys/fs/cgroup'): CgroupMode {
  if (existsSync(`${sysFsCgroup}/cgroup.controllers`)) return 'v2';
  return existsSync(`${sysFsCgroup}/unified/cgroup.controllers`) ? 'hybrid' : 'v1';
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * podman's own rule (containers/common): the systemd cgroup manager when PID 1 is systemd,
 * cgroupfs otherwise. We pass it to podman explicitly on systemd hosts (podmanGlobalArgs), so a
 * containers.conf saying otherwise cannot make the session's parent the wrong form (podman
 * refuses a path parent under systemd: "did not receive systemd slice as cgroup parent").
 */
export function cgroupManager(pid1Comm: string | undefined = readOrUndefined('/proc/1/comm')): CgroupManager {
  return pid1Comm?.trim() === 'systemd' ? 'systemd' : 'cgroupfs';
}

/** Where podman looks for each runtime (containers.conf defaults); podman does not search PATH for them. */
export const runtimePaths: Record<'runc' | 'crun', string[]> = {
  runc: [
    '/usr/bin/runc',
    '/usr/sbin/runc',
    '/usr/local/bin/runc',
    '/usr/local/sbin/runc',
    '/sbin/runc',
    '/bin/runc',
    '/usr/lib/cri-o-runc/sbin/runc',
    '/run/current-system/sw/bin/runc',
  ],
  crun: [
    '/usr/bin/crun',
    '/usr/sbin/crun',
    '/usr/local/bin/crun',
    '/usr/local/sbin/crun',
    '/sbin/crun',
    '/bin/crun',
    '/run/current-system/sw/bin/crun',
  ],
};

/**
 * The OCI runtime that can start containers here, named explicitly. crun refuses cgroup
 * v1/hybrid ("cgroups in hybrid mode not supported"), so v1 gets runc. On v2 crun, as podman
 * itself prefers, else runc; undefined when neither is installed (preflight refuses that, 83).
 */
export function ociRuntime(mode: CgroupMode = cgroupMode(), exists: (file: string) => boolean = existsSync): string | undefined {
  if (mode !== 'v2') return 'runc';
  if (runtimePaths.crun.some(exists)) return 'crun';
  return runtimePaths.runc.some(exists) ? 'runc' : undefined;
}

/** Global podman arguments that every podman call here needs (before the subcommand). */
export function podmanGlobalArgs(mode: CgroupMode = cgroupMode(), manager: CgroupManager = cgroupManager()): string[] {
  const runtime = ociRuntime(mode);
  return [...(runtime ? ['--runtime', runtime] : []), ...(manager === 'systemd' ? ['--cgroup-manager=systemd'] : [])];
}

/** Reads one "Key:\tvalue" line of a /proc status file. */
export function procStatusField(field: string, statusText = readFileSync('/proc/self/status', 'utf8')): string | undefined {
  const line = statusText.split('\n').find((l) => l.startsWith(`${field}:`));
  return line?.slice(field.length + 1).trim();
}

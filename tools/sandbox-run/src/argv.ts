/**
 * Plan + host facts -> the exact podman argv. Pure: no fs, no processes, so
 * `--dry-run`, the tests and a k3s translation all see the same flags.
 */
import type { CgroupManager, CgroupMode } from '@agent-sandbox/shared';
import type { RunPlan } from '@agent-sandbox/shared/schemas/sandbox-run';
import { memoryBytes, resolvePlan, type ResolvedPlan } from './plan.js';

/** What preflight learned about this host; everything the argv depends on besides the plan. */
export interface RunFacts {
  /** The podman executable. */
  podman: string;
  cgroupMode: CgroupMode;
  /** systemd: podman is told so (--cgroup-manager=systemd) and the parent must be a slice; default cgroupfs. */
  cgroupManager?: CgroupManager;
  /** The OCI runtime to name with --runtime (runc on cgroup v1/hybrid); undefined: podman's default. */
  runtime: string | undefined;
  /** True when the caller is not root: podman runs rootless and gets --userns=keep-id. */
  rootless: boolean;
  /** Values for --ulimit nofile/nproc, at or below the caller's hard limits. */
  ulimits: { nofile: number; nproc: number };
  /** Absolute path of the checked seccomp profile (seccomp-location.ts): no namespaces inside. */
  seccompProfile: string;
}

/** Podman's memory flag value: bytes as a plain integer (podman reads it as bytes). */
function sizeArg(size: string | number): string {
  return String(memoryBytes(size));
}

function mountArg(m: ResolvedPlan['mounts'][number]): string {
  return `type=bind,source=${m.source},destination=${m.destination}${m.readOnly ? ',ro=true' : ''}`;
}

/**
 * podman's overlay volume (4.3 has no --mount type for it): the source is the lower layer,
 * never written; the upper and work directories are the caller's (podman neither makes nor
 * removes them), so what the container writes there is where the caller can count and remove it.
 */
function overlayArg(m: ResolvedPlan['mounts'][number]): string {
  return `${m.source}:${m.destination}:O,upperdir=${m.overlay!.upper},workdir=${m.overlay!.work}`;
}

/** The podman argv for a plan on a host described by `facts` (argv[0] is the podman executable). */
export function buildRunArgv(plan: RunPlan | ResolvedPlan, facts: RunFacts): string[] {
  return [
    facts.podman,
    ...(facts.runtime ? ['--runtime', facts.runtime] : []),
    ...(facts.cgroupManager === 'systemd' ? ['--cgroup-manager=systemd'] : []),
    ...buildRunArgs(plan, facts),
  ];
}

/** The same argv from the subcommand on (`run ...`): what runPodman takes (it adds the global args itself). */
export function buildRunArgs(plan: RunPlan | ResolvedPlan, facts: RunFacts): string[] {
  const p = resolvePlan(plan);
  const argv = ['run'];
  if (p.remove) argv.push('--rm');
  argv.push('--name', p.name, '--pull=never');
  if (p.interactive) argv.push('--interactive');
  if (p.tty) argv.push('--tty');
  argv.push(
    '--cap-drop=ALL',
    '--security-opt=no-new-privileges',
    // Podman's default profile allows unshare, setns and clone with CLONE_NEW* (seccomp-profile.ts).
    `--security-opt=seccomp=${facts.seccompProfile}`,
    `--network=${p.network}`,
    `--pids-limit=${p.limits.pids}`,
    `--memory=${sizeArg(p.limits.memory)}`,
    `--memory-swap=${sizeArg(p.limits.memorySwap)}`,
    `--cpus=${p.limits.cpus}`,
    `--cpu-shares=${p.limits.cpuShares}`,
    `--ulimit=nofile=${facts.ulimits.nofile}:${facts.ulimits.nofile}`,
    `--ulimit=nproc=${facts.ulimits.nproc}:${facts.ulimits.nproc}`,
    // Output is attached to the caller; a log driver would also copy it (secrets included) to disk.
    '--log-driver=none',
    `--user=${p.user}`,
  );
  if (facts.rootless) argv.push('--userns=keep-id');
  if (p.readOnlyRoot) argv.push('--read-only', '--read-only-tmpfs=true');
  if (p.cgroupParent) argv.push(`--cgroup-parent=${p.cgroupParent}`);
  if (p.cidfile) argv.push(`--cidfile=${p.cidfile}`);
  if (p.timeoutSeconds) argv.push(`--timeout=${p.timeoutSeconds}`);
  if (p.workdir) argv.push(`--workdir=${p.workdir}`);
  for (const name of p.env) argv.push(`--env=${name}`);
  for (const m of p.mounts) argv.push(m.overlay ? `--volume=${overlayArg(m)}` : `--mount=${mountArg(m)}`);
  argv.push('--', p.image, ...p.command);
  return argv;
}

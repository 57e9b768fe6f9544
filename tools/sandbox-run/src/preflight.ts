/**
 * Fail closed before starting anything: every check reads /proc, /sys or
 * podman's storage directly (no `podman info`, ~0.1 s a call). Order: the plan
 * (80), whether this host can enforce the limits (88), whether a runtime can
 * start containers (83), the seccomp profile (83), mount sources (86), the image
 * (82). Host capability comes before content, so a host that cannot contain
 * anything says so first.
 */
import { ToolError, type CodeOf, cgroupManager, ociRuntime, procStatusField, runtimePaths, type CgroupMode } from '@agent-sandbox/shared';
import { podmanBinary, runPodman } from '@agent-sandbox/shared/podman';
import type { RunPlan } from '@agent-sandbox/shared/schemas/sandbox-run';
import type { RunFacts } from './argv.js';
import { findExecutable, hardLimit, realHostProbe, type HostProbe } from './host-probe.js';
import { imageInStorage } from './image-store.js';
import { resolvePlan, type ResolvedPlan } from './plan.js';
import { checkSeccompProfile } from './seccomp-location.js';

export interface PreflightDeps {
  /** The host's files and identity (default: the real ones). */
  probe?: HostProbe;
  /** Asked only when storage does not list the image; default `podman image exists`. */
  imageExists?: (image: string) => Promise<boolean>;
  /** False skips the image check (nothing else is skipped). */
  checkImage?: boolean;
  /** The seccomp profile to check and use (default: the one beside the tool, seccompProfilePath()); checked all the same. */
  seccompProfile?: string;
}

/** Controllers --memory/--memory-swap, --pids-limit and --cpus/--cpu-shares need. */
export const requiredControllers = ['memory', 'pids', 'cpu'] as const;

/** Ulimit ceiling: enough for an agent and its builds; podman's default (1048576) fails here without CAP_SYS_RESOURCE. */
export const ulimitCeiling = 4096;

/** Same rule as shared host-facts' cgroupMode, through the probe so another host can be described. */
export function probeCgroupMode(probe: HostProbe): CgroupMode {
  if (probe.exists('/sys/fs/cgroup/cgroup.controllers')) return 'v2';
  return probe.exists('/sys/fs/cgroup/unified/cgroup.controllers') ? 'hybrid' : 'v1';
}

function refuseLimits(code: CodeOf<'limits'>, message: string): never {
  throw new ToolError('limits', code, `limits cannot be enforced here: ${message}`);
}

/** cgroup v2: the controllers available where podman will create the container's cgroup. */
function checkV2(probe: HostProbe, rootless: boolean): void {
  const file = rootless
    ? `/sys/fs/cgroup/user.slice/user-${probe.uid}.slice/user@${probe.uid}.service/cgroup.controllers`
    : '/sys/fs/cgroup/cgroup.controllers';
  const text = probe.readFile(file);
  if (text === undefined) {
    refuseLimits(
      'controllers-not-delegated',
      `${file} is missing: no delegated cgroup for uid ${probe.uid} (rootless podman needs a systemd user session with memory, pids and cpu delegated)`,
    );
  }
  const have = new Set(text.trim().split(/\s+/));
  const missing = requiredControllers.filter((c) => !have.has(c));
  if (missing.length > 0) {
    refuseLimits(
      'controllers-not-delegated',
      `the ${missing.join(', ')} controller${missing.length > 1 ? 's are' : ' is'} not available in ${file} (podman would ignore those limits); delegate them (systemd: Delegate=memory pids cpu)`,
    );
  }
}

/** cgroup v1/hybrid (rootful): the v1 hierarchies must be mounted, and swap accounting on for --memory-swap. */
function checkV1(probe: HostProbe): void {
  const table = probe.readFile('/proc/cgroups') ?? '';
  const rows = new Map(
    table
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(/\s+/))
      .map((f) => [f[0], { hierarchy: Number(f[1]), enabled: f[3] === '1' }] as const),
  );
  const missing = requiredControllers.filter((c) => {
    const row = rows.get(c);
    return !row || !row.enabled || row.hierarchy === 0;
  });
  if (missing.length > 0) {
    refuseLimits(
      'controller-missing',
      `the cgroup v1 ${missing.join(', ')} controller is not mounted (see /proc/cgroups); podman would run without that limit`,
    );
  }
  if (!probe.exists('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes')) {
    refuseLimits(
      'swap-limit-unsupported',
      'the kernel does not account swap (no memory.memsw.limit_in_bytes): podman would drop --memory-swap; boot with swapaccount=1',
    );
  }
}

/** Refuses (88) limits podman would silently ignore on this host. */
export function checkLimitsEnforceable(probe: HostProbe, mode: CgroupMode, rootless: boolean): void {
  if (rootless && mode !== 'v2') {
    refuseLimits(
      'rootless-cgroup-v1',
      `rootless podman (uid ${probe.uid}) on cgroup ${mode === 'hybrid' ? 'v1 (hybrid)' : 'v1'} ignores --memory, --pids-limit and --cpus ("Resource limits are not supported and ignored on cgroups V1 rootless systems"); run as root here, or on a cgroup v2 host with memory, pids and cpu delegated`,
    );
  }
  if (mode === 'v2') checkV2(probe, rootless);
  else checkV1(probe);
}

function hasRuntime(probe: HostProbe, name: 'runc' | 'crun'): boolean {
  return runtimePaths[name].some((file) => probe.isExecutable(file));
}

/** Refuses (83) when no runtime here can start a container. Returns podman's name and the runtime to name. */
export function checkRuntime(probe: HostProbe, mode: CgroupMode, rootless: boolean): { podman: string; runtime: string | undefined } {
  const podman = findExecutable(probe, podmanBinary);
  if (!podman)
    throw new ToolError(
      'startFailed',
      'podman-missing',
      `containers cannot be started: ${podmanBinary} is not installed or not on PATH (apt-get install podman)`,
    );
  if (mode !== 'v2') {
    if (!hasRuntime(probe, 'runc')) {
      throw new ToolError(
        'startFailed',
        'runtime-missing',
        `containers cannot be started: cgroup ${mode} needs the runc runtime (crun fails here: "cgroups in hybrid mode not supported") and runc is not installed (apt-get install runc)`,
      );
    }
  } else if (!hasRuntime(probe, 'crun') && !hasRuntime(probe, 'runc')) {
    throw new ToolError('startFailed', 'runtime-missing', 'containers cannot be started: neither crun nor runc is installed');
  }
  if (rootless && procStatusField('NoNewPrivs', probe.readFile('/proc/self/status') ?? '') === '1') {
    throw new ToolError(
      'startFailed',
      'no-new-privs-rootless',
      'containers cannot be started: NoNewPrivs is 1, so rootless podman cannot run the setuid newuidmap; re-run through `nnp-probe exec` (systemd-run --user handoff)',
    );
  }
  return { podman: podmanBinary, runtime: ociRuntime(mode, (file) => probe.isExecutable(file)) };
}

/** --ulimit values: at most the ceiling and never above the caller's hard limits (raising needs CAP_SYS_RESOURCE). */
export function ulimitsFor(probe: HostProbe): RunFacts['ulimits'] {
  const text = probe.readFile('/proc/self/limits') ?? '';
  const pick = (row: string) => {
    const hard = hardLimit(text, row);
    return hard === undefined || Number.isNaN(hard) ? 1024 : Math.min(ulimitCeiling, hard);
  };
  return { nofile: pick('Max open files'), nproc: pick('Max processes') };
}

function checkMountSources(probe: HostProbe, plan: ResolvedPlan): void {
  plan.mounts.forEach((m, i) => {
    if (!probe.exists(m.source)) {
      throw new ToolError(
        'unsafePath',
        'mount-source-missing',
        `input.mounts[${i}].source: ${m.source} does not exist; nothing is created on the host by sandbox-run`,
        {
          field: `input.mounts[${i}].source`,
        },
      );
    }
  });
}

async function podmanImageExists(image: string): Promise<boolean> {
  return (await runPodman(['image', 'exists', image], { expect: 'any', timeoutMs: 30_000 })).exitCode === 0;
}

/** Refuses (82) an image that is not in local storage; sandbox-run never pulls. */
export async function checkImage(image: string, probe: HostProbe, imageExists: (image: string) => Promise<boolean>): Promise<void> {
  if (imageInStorage(image, probe) === 'present') return;
  if (await imageExists(image)) return;
  throw new ToolError(
    'imageAbsent',
    'image-absent',
    `image ${image} is not in podman's local storage (sandbox-run never pulls); build it: bash image/build-all.sh`,
    { image },
  );
}

/**
 * The host's checks, once per session, before anything starts: whether this host can enforce
 * the limits (88), start a container safely (83: a runtime, our seccomp profile) and has the
 * image (82). Returns the host facts buildRunArgv needs; the launcher calls this once and hands
 * the facts to runPlan.
 */
export async function hostPreflight(image: string, deps: PreflightDeps = {}): Promise<RunFacts> {
  const probe = deps.probe ?? realHostProbe();
  const mode = probeCgroupMode(probe);
  const rootless = probe.uid !== 0;
  checkLimitsEnforceable(probe, mode, rootless);
  const { podman, runtime } = checkRuntime(probe, mode, rootless);
  const seccompProfile = checkSeccompProfile(probe, deps.seccompProfile);
  const ulimits = ulimitsFor(probe);
  if (deps.checkImage !== false) await checkImage(image, probe, deps.imageExists ?? podmanImageExists);
  return {
    podman,
    cgroupMode: mode,
    cgroupManager: cgroupManager(probe.readFile('/proc/1/comm')),
    runtime,
    rootless,
    ulimits,
    seccompProfile,
  };
}

/**
 * All the checks, in order, before anything starts; returns the host facts
 * buildRunArgv needs. Throws ToolError 80/88/83/86/82. Given the facts of an earlier
 * hostPreflight, only the plan's own checks run.
 */
export async function preflight(plan: RunPlan | ResolvedPlan, deps: PreflightDeps = {}, facts?: RunFacts): Promise<RunFacts> {
  const resolved = resolvePlan(plan);
  const probe = deps.probe ?? realHostProbe();
  const host = facts ?? (await hostPreflight(resolved.image, { ...deps, checkImage: false }));
  checkMountSources(probe, resolved);
  if (!facts && deps.checkImage !== false) await checkImage(resolved.image, probe, deps.imageExists ?? podmanImageExists);
  return host;
}

/**
 * The checks that decide whether a session may start on this node, shared by the run
 * path (which throws the first refusal) and `doctor` (which reports every line). Each
 * check names its exit code and, when it fails, the exact remedy.
 */
import { existsSync, readFileSync } from 'node:fs';
import { ExitCode, ToolError, cgroupMode, ociRuntime, type CgroupMode } from '@agent-sandbox/shared';
import { captureCommand } from '@agent-sandbox/shared/capture';
import { runPodman, systemPath } from '@agent-sandbox/shared/podman';
import { imageInStorage, realHostProbe } from '@agent-sandbox/sandbox-run';
import type { DoctorCheck } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { NnpProbe } from './cores.js';

export interface HostFacts {
  euid: number;
  user: string;
  cgroup: CgroupMode;
  runtime: string | undefined;
}

export function readHostFacts(user: string): HostFacts {
  const mode = cgroupMode();
  return { euid: process.geteuid?.() ?? 0, user, cgroup: mode, runtime: ociRuntime(mode) };
}

/** podman-rootful when the launcher runs as root, podman-rootless otherwise. */
export function containmentMode(facts: Pick<HostFacts, 'euid'>): 'podman-rootful' | 'podman-rootless' {
  return facts.euid === 0 ? 'podman-rootful' : 'podman-rootless';
}

/**
 * Recursion: a launcher inside one of our containers (podman writes /run/.containerenv;
 * sandbox-run sets AGENT_SANDBOX_SESSION) must not start another session (90). A variable
 * can only make this stricter: setting it refuses, unsetting it restores nothing.
 */
export function checkRecursion(env: NodeJS.ProcessEnv, containerEnvFile = '/run/.containerenv'): void {
  if (env['AGENT_SANDBOX_SESSION']) {
    throw new ToolError('policy', 'recursion', `already inside agent-sandbox session ${env['AGENT_SANDBOX_SESSION']} (AGENT_SANDBOX_SESSION is set); a session does not start sessions`);
  }
  if (existsSync(containerEnvFile)) {
    throw new ToolError('policy', 'inside-container', `${containerEnvFile} exists: this launcher runs inside a container; a session does not start sessions`);
  }
}

/** NoNewPrivs: the handoff is needed only when measured; without a user manager that is 84. */
export function checkNoNewPrivs(probe: NnpProbe): { reexec: boolean } {
  if (!probe.reexec) return { reexec: false };
  const manager = probe.userManager as { ready?: boolean; problems?: string[] };
  if (manager.ready !== true) {
    const why = (manager.problems ?? []).join('; ');
    throw new ToolError(
      'userManager',
      'no-user-manager',
      `NoNewPrivs is 1 here, so rootless podman needs the systemd-run --user handoff, but the user manager is not usable${why ? ` (${why})` : ''}; run \`loginctl enable-linger\` for this user and log in again`,
    );
  }
  return { reexec: true };
}

/** Rootless on cgroup v1 runs unlimited (podman: "Resource limits are not supported and ignored"): 88. */
export function checkLimitsEnforceable(facts: HostFacts, readController = (p: string) => readFileSync(p, 'utf8')): void {
  if (facts.euid === 0) return;
  if (facts.cgroup !== 'v2') {
    throw new ToolError(
      'limits',
      'rootless-cgroup-v1',
      `rootless podman (uid ${facts.euid}) on cgroup ${facts.cgroup} ignores resource limits ("Resource limits are not supported and ignored on cgroups V1 rootless systems"); run as root or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)`,
    );
  }
  const file = `/sys/fs/cgroup/user.slice/user-${facts.euid}.slice/user@${facts.euid}.service/cgroup.controllers`;
  let controllers: string[] = [];
  try {
    controllers = readController(file).trim().split(/\s+/);
  } catch {
    controllers = [];
  }
  const missing = ['memory', 'pids', 'cpu'].filter((c) => !controllers.includes(c));
  if (missing.length > 0) {
    throw new ToolError(
      'limits',
      'controllers-not-delegated',
      `cgroup controllers ${missing.join(', ')} are not delegated to uid ${facts.euid} (${file}); add Delegate=memory pids cpu to user@.service`,
    );
  }
}

/** Rootless podman needs subordinate ids for the user namespace. */
export function checkSubuids(facts: HostFacts, read = (p: string) => readFileSync(p, 'utf8')): void {
  if (facts.euid === 0) return;
  let text = '';
  try {
    text = read('/etc/subuid');
  } catch {
    text = '';
  }
  const has = text.split('\n').some((l) => l.startsWith(`${facts.user}:`) || l.startsWith(`${facts.euid}:`));
  if (!has) {
    throw new ToolError('startFailed', 'no-subuids', `user ${facts.user} has no range in /etc/subuid; run \`usermod --add-subuids 100000-165535 --add-subgids 100000-165535 ${facts.user}\``);
  }
}

/** podman and the OCI runtime answer (83 otherwise: nothing could start a container). */
export async function checkPodman(): Promise<string> {
  let out;
  try {
    out = await runPodman(['version', '--format', '{{.Client.Version}}'], { expect: 'any', timeoutMs: 30_000 });
  } catch (err) {
    throw new ToolError('startFailed', 'no-podman', `podman cannot be run: ${(err as Error).message}; install it (apt-get install podman runc)`);
  }
  if (out.exitCode !== 0) throw new ToolError('startFailed', 'podman-broken', `podman version failed (exit ${out.exitCode}): ${out.stderr.trim().split('\n').pop()}`);
  const runtime = ociRuntime();
  if (runtime) {
    const which = await captureCommand('sh', ['-c', 'command -v "$1"', 'sh', runtime], { env: { PATH: systemPath }, timeoutMs: 10_000 });
    if (which.exitCode !== 0) throw new ToolError('startFailed', 'no-oci-runtime', `OCI runtime ${runtime} is not installed (crun cannot run on cgroup v1 here); apt-get install ${runtime}`);
  }
  return out.stdout.trim();
}

/**
 * The image exists locally (no registry is reachable, so nothing is pulled): 82 otherwise.
 * podman's own images.json is read first (sandbox-run's imageInStorage, well under a
 * millisecond); only "present" is trusted there, anything else asks `podman image exists`.
 */
export async function checkImage(image: string): Promise<void> {
  if (imageInStorage(image, realHostProbe()) === 'present') return;
  const out = await runPodman(['image', 'exists', image], { expect: 'any', timeoutMs: 30_000 });
  if (out.exitCode === 1) throw new ToolError('imageAbsent', 'image-absent', `image ${image} is not present on this node; build it with \`bash image/build-all.sh\``);
  if (out.exitCode !== 0) throw new ToolError('startFailed', 'podman-broken', `podman image exists ${image} failed (exit ${out.exitCode}): ${out.stderr.trim().split('\n').pop()}`);
}

/** Kernel-log access, which attribution needs for OOM and pids evidence on cgroup v1. */
export async function checkKernelLog(): Promise<void> {
  const out = await captureCommand('dmesg', ['--notime', '--level', 'err'], { env: { PATH: systemPath }, timeoutMs: 10_000 });
  if (out.exitCode !== 0) {
    throw new ToolError('limits', 'no-kernel-log', `dmesg cannot be read (kernel.dmesg_restrict=1 and not root): OOM and pids-limit kills will be reported as plain exits; run the launcher as root or give it CAP_SYSLOG`);
  }
}

/** Runs a check for the doctor report: ok, or the refusal's message as the remedy. */
export async function doctorCheck(name: string, required: boolean, fn: () => unknown): Promise<DoctorCheck & { required: boolean }> {
  try {
    const detail = await fn();
    return { name, ok: true, required, detail: typeof detail === 'string' && detail ? detail : 'ok' };
  } catch (err) {
    if (err instanceof ToolError) return { name, ok: false, required, detail: err.code, remedy: err.message, exitCode: err.exitCode };
    return { name, ok: false, required, detail: 'internal', remedy: (err as Error).message, exitCode: ExitCode.internal };
  }
}

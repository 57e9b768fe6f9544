/**
 * The checks that decide whether a session may start on this node, run once per session
 * before anything is staged: shared by the run path (which throws the first refusal) and
 * `doctor` (which reports every line). Each names its exit code and, when it fails, the remedy.
 */
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { ExitCode, ToolError, procStatusField } from '@agent-sandbox/shared';
import { captureCommand } from '@agent-sandbox/shared/capture';
import { formatSize, parseSize, type Limits } from '@agent-sandbox/shared/limits';
import { runPodman, systemPath } from '@agent-sandbox/shared/podman';
import { graphRoot, realHostProbe } from '@agent-sandbox/sandbox-run';
import type { DoctorCheck } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import type { NnpProbeOutput, UserManagerReport } from '@agent-sandbox/shared/schemas/nnp-probe';
import { probe as nnpProbe, realDeps } from '@agent-sandbox/nnp-probe';

/** podman-rootful when the launcher runs as root, podman-rootless otherwise. */
export function containmentMode(euid = process.geteuid?.() ?? 0): 'podman-rootful' | 'podman-rootless' {
  return euid === 0 ? 'podman-rootful' : 'podman-rootless';
}

/**
 * Recursion: a launcher inside one of our containers (podman writes /run/.containerenv;
 * sandbox-run sets AGENT_SANDBOX_SESSION) must not start another session (90). A variable
 * can only make this stricter: setting it refuses, unsetting it restores nothing.
 */
export function checkRecursion(env: NodeJS.ProcessEnv, containerEnvFile = '/run/.containerenv'): void {
  if (env['AGENT_SANDBOX_SESSION']) {
    throw new ToolError(
      'policy',
      'recursion',
      `already inside agent-sandbox session ${env['AGENT_SANDBOX_SESSION']} (AGENT_SANDBOX_SESSION is set); a session does not start sessions`,
    );
  }
  if (existsSync(containerEnvFile)) {
    throw new ToolError(
      'policy',
      'inside-container',
      `${containerEnvFile} exists: this launcher runs inside a container; a session does not start sessions`,
    );
  }
}

/** What the launcher needs of nnp-probe's report: whether to hand off, and whether it can. */
export type NoNewPrivsState = Pick<NnpProbeOutput, 'noNewPrivs' | 'reexec'> & { userManager?: UserManagerReport };

/**
 * nnp-probe's full probe (it asks systemd-run and loginctl about the user manager) only when
 * /proc/self/status does not say NoNewPrivs 0: with 0 there is no handoff to make.
 */
export async function probeNoNewPrivs(): Promise<NoNewPrivsState> {
  let status: string | undefined;
  try {
    status = procStatusField('NoNewPrivs', readFileSync('/proc/self/status', 'utf8'));
  } catch {
    status = undefined;
  }
  if (status === '0') return { noNewPrivs: false, reexec: false };
  return await nnpProbe(realDeps());
}

/** NoNewPrivs: the handoff is needed only when measured; without a user manager that is 84. */
export function checkNoNewPrivs(state: NoNewPrivsState): { reexec: boolean } {
  if (!state.reexec) return { reexec: false };
  if (state.userManager?.ready !== true) {
    const why = (state.userManager?.problems ?? []).join('; ');
    throw new ToolError(
      'userManager',
      'user-manager-missing',
      `NoNewPrivs is 1 here, so rootless podman needs the systemd-run --user handoff, but the user manager is not usable${why ? ` (${why})` : ''}; run \`loginctl enable-linger\` for this user and log in again`,
    );
  }
  return { reexec: true };
}

/** Rootless podman needs subordinate ids for the user namespace. */
export function checkSubuids(euid: number, user: string, read = (p: string) => readFileSync(p, 'utf8')): void {
  if (euid === 0) return;
  let text = '';
  try {
    text = read('/etc/subuid');
  } catch {
    text = '';
  }
  if (!text.split('\n').some((l) => l.startsWith(`${user}:`) || l.startsWith(`${euid}:`))) {
    throw new ToolError(
      'startFailed',
      'no-subuids',
      `user ${user} has no range in /etc/subuid; run \`usermod --add-subuids 100000-165535 --add-subgids 100000-165535 ${user}\``,
    );
  }
}

/** The ledger can be appended to (a session without its record does not start): 83 otherwise. */
export function checkLedgerWritable(file: string): void {
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    closeSync(openSync(file, 'a', 0o600));
  } catch (err) {
    throw new ToolError(
      'startFailed',
      'ledger-unwritable',
      `the ledger ${file} cannot be appended to (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); a session is not started without its record: fix it or pass --ledger FILE`,
    );
  }
}

/** The nearest existing directory at or above `dir`. */
function existingAncestor(dir: string): string {
  let at = dir;
  while (!existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  return at;
}

/** podman's storage can be written (and has some room): 83 otherwise, before anything starts. */
export function checkStorageWritable(minFreeBytes = 64 * 1024 * 1024): string {
  const root = graphRoot(realHostProbe());
  if (!root) return 'unknown (no HOME)';
  const at = existingAncestor(root);
  try {
    accessSync(at, constants.W_OK);
  } catch {
    throw new ToolError(
      'startFailed',
      'storage-unwritable',
      `podman's storage ${root} cannot be written (${at} is not writable by this user)`,
    );
  }
  const fs = statfsSync(at);
  const free = fs.bavail * fs.bsize;
  if (free < minFreeBytes)
    throw new ToolError('startFailed', 'storage-full', `podman's storage ${root} has ${formatSize(free)} free; a container cannot start`);
  return `${root}, ${formatSize(Math.floor(free / 1048576) * 1048576)} free`;
}

/**
 * The disk ceiling this session gets: the declared one when the root's filesystem can hold
 * it (88 otherwise, when it was given); without --disk, the default, lowered to half the free
 * space when that is less.
 */
export function diskCeiling(limits: Limits, diskGiven: boolean, root: string): Limits {
  const fs = statfsSync(root);
  const free = fs.bavail * fs.bsize;
  const wanted = parseSize('--disk', limits.disk);
  if (diskGiven) {
    if (wanted > free) {
      throw new ToolError(
        'limits',
        'no-room-for-disk',
        `--disk ${limits.disk}: the filesystem of ${root} has only ${formatSize(Math.floor(free / 1048576) * 1048576)} free; the session's disk ceiling could not be honoured`,
      );
    }
    return limits;
  }
  const half = Math.floor(free / 2 / 1048576) * 1048576;
  if (half < 64 * 1048576)
    throw new ToolError(
      'limits',
      'no-room-for-disk',
      `the filesystem of ${root} has ${formatSize(free)} free: not enough for a session (at least 128m)`,
    );
  return wanted <= half ? limits : { ...limits, disk: formatSize(half) };
}

/** podman answers (83 otherwise: nothing could start a container). */
export async function checkPodman(): Promise<string> {
  let out;
  try {
    out = await runPodman(['version', '--format', '{{.Client.Version}}'], { expect: 'any', timeoutMs: 30_000 });
  } catch (err) {
    throw new ToolError(
      'startFailed',
      'podman-missing',
      `podman cannot be run: ${(err as Error).message}; install it (apt-get install podman runc)`,
    );
  }
  if (out.exitCode !== 0)
    throw new ToolError(
      'startFailed',
      'podman-broken',
      `podman version failed (exit ${out.exitCode}): ${out.stderr.trim().split('\n').pop()}`,
    );
  return out.stdout.trim();
}

/** Kernel-log access, which attribution needs for OOM and pids evidence on cgroup v1. */
export async function checkKernelLog(): Promise<void> {
  const out = await captureCommand('dmesg', ['--notime', '--level', 'err'], { env: { PATH: systemPath }, timeoutMs: 10_000 });
  if (out.exitCode !== 0) {
    throw new ToolError(
      'limits',
      'no-kernel-log',
      'dmesg cannot be read (kernel.dmesg_restrict=1 and not root): on cgroup v1, OOM and pids-limit kills will be reported as plain exits; run the launcher as root or give it CAP_SYSLOG',
    );
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

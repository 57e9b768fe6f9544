/**
 * The one way our code and our tests call podman: global args for this host's
 * runtime, a timeout, the expected exit code stated, and the call logged on
 * failure. (From podman's own system tests: every call through one helper.)
 */
import { spawn, type StdioOptions } from 'node:child_process';
import { captureCommand } from './capture.js';
import { closeSync, existsSync, lstatSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { podmanGlobalArgs } from './host-facts.js';
import { processAlive } from './process-alive.js';
import { podmanConfigVariables, systemPath } from './podman-pin.js';
import { ToolError } from './tool-error.js';

export interface PodmanCall {
  /** Exit codes that are not a failure (default [0]); 'any' accepts every code. */
  expect?: number[] | 'any';
  timeoutMs?: number;
  input?: string;
  /** The whole environment podman gets; default: podmanEnv(process.env, passEnv). */
  env?: Record<string, string | undefined>;
  /** Names copied from our environment into podman's (values `--env NAME` forwards). */
  passEnv?: string[];
  /** podman's working directory (default: a scratch directory; see podmanScratchDir). */
  cwd?: string;
}

export interface PodmanResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  argv: string[];
}

export { systemPath, podmanConfigVariables };

/**
 * The environment podman runs with, from an allowlist: HOME and USER from the password
 * database, PATH the system's, XDG_RUNTIME_DIR for rootless, plus the names in `pass`
 * (the values that `--env NAME` forwards into the container).
 */
export function podmanEnv(env: NodeJS.ProcessEnv, pass: readonly string[] = []): NodeJS.ProcessEnv {
  const info = os.userInfo();
  const out: NodeJS.ProcessEnv = { PATH: systemPath, HOME: info.homedir, USER: info.username, LOGNAME: info.username };
  const runtimeDir = `/run/user/${info.uid}`;
  if (info.uid !== 0 && existsSync(runtimeDir)) out['XDG_RUNTIME_DIR'] = runtimeDir;
  for (const name of pass) if (env[name] !== undefined) out[name] = env[name];
  return out;
}

/** The podman binary: found in the system directories only; no variable can name another. */
export const podmanBinary =
  systemPath
    .split(':')
    .map((dir) => `${dir}/podman`)
    .find((candidate) => existsSync(candidate)) ?? 'podman';

const scratchName = /^agent-sandbox-podman-(\d+)-/;

/** The start of the name of every scratch directory process `pid` makes (see podmanScratchDir). */
export const scratchDirPrefix = (pid: number) => `agent-sandbox-podman-${pid}-`;

/**
 * A scratch working directory for one podman process. conmon writes a file named "oom" into
 * podman's working directory when the kernel OOM-kills the container (measured here: podman
 * 4.3.1, conmon 2.1.6), so podman never runs in the caller's directory (an agent's OOM would
 * otherwise drop a file into the user's repository). Its name carries our pid (see
 * sweepScratchDirs).
 */

export function podmanScratchDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), scratchDirPrefix(process.pid)));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Removes the scratch directories of processes that died before removing their own (a launcher
 * killed with SIGKILL while podman ran): each name carries its maker's pid. Only our own, only
 * of a dead pid; a pid reused since keeps its directory until a later sweep. Returns the count.
 */
export function sweepScratchDirs(): number {
  const tmp = os.tmpdir();
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return 0;
  }
  for (const name of names) {
    const pid = Number(scratchName.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid <= 0 || processAlive(pid)) continue;
    const dir = path.join(tmp, name);
    try {
      const st = lstatSync(dir);
      if (!st.isDirectory() || st.uid !== process.getuid?.()) continue;
      rmSync(dir, { recursive: true, force: true });
      removed += 1;
    } catch {
      // gone already, or not ours to remove
    }
  }
  return removed;
}

export async function runPodman(args: string[], call: PodmanCall = {}): Promise<PodmanResult> {
  const argv = [...podmanGlobalArgs(), ...args];
  const scratch = call.cwd === undefined ? podmanScratchDir() : undefined;
  try {
    return await runPodmanIn(argv, args, call, call.cwd ?? scratch?.dir);
  } finally {
    scratch?.remove();
  }
}

async function runPodmanIn(argv: string[], args: string[], call: PodmanCall, cwd: string | undefined): Promise<PodmanResult> {
  const timeoutMs = call.timeoutMs ?? 120_000;
  const result = await captureCommand(podmanBinary, argv, {
    env: call.env ?? podmanEnv(process.env, call.passEnv),
    timeoutMs,
    ...(call.input === undefined ? {} : { input: call.input }),
    ...(cwd === undefined ? {} : { cwd }),
  });
  const exitCode = result.exitCode ?? -1;
  const out: PodmanResult = {
    exitCode,
    stdout: result.stdout,
    stderr: result.spawnError === undefined ? result.stderr : `${result.stderr}${result.stderr ? '\n' : ''}${result.spawnError}`,
    argv: [podmanBinary, ...argv],
  };
  const expect = call.expect ?? [0];
  if (expect !== 'any' && !expect.includes(exitCode)) {
    const why = result.timedOut ? `timed out after ${timeoutMs} ms` : `exit ${exitCode}`;
    throw new ToolError(
      'internal',
      'podman-failed',
      `podman ${args[0] ?? ''} failed (${why}): ${out.stderr.trim().split('\n').slice(-3).join(' | ')}`,
      {
        argv: out.argv,
        exitCode,
      },
    );
  }
  return out;
}

/** One stdio slot of an attached podman: a node stdio value, or a log file to write to. */
export type AttachedStdioSlot = 'inherit' | 'ignore' | 'pipe' | number | { file: string; append?: boolean };
export type AttachedStdio = 'inherit' | 'ignore' | readonly AttachedStdioSlot[];

/**
 * Runs one long-lived podman process attached to the caller's stdio (the session's
 * `podman run`) with node's own child_process rather than execa: that spawn is on the
 * launcher's critical path, and loading execa alone costs more than all of our own code
 * (measured here: 86 ms unbundled, ~20 ms bundled). Same rules as runPodman: the system's
 * podman, the allowlisted environment, a scratch working directory. Resolves to podman's exit
 * status, or -1 when podman ended without one (killed by a signal, or could not be spawned).
 */
export async function spawnPodmanAttached(
  args: string[],
  call: {
    stdio?: AttachedStdio;
    env?: NodeJS.ProcessEnv;
    passEnv?: string[];
    signal?: AbortSignal;
    onSpawn?: (pid: number | undefined) => void;
    /** With stdio[0] 'pipe': what podman reads, written by the caller (a shell carried over ssh). */
    feedStdin?: (stdin: NodeJS.WritableStream) => void;
  } = {},
): Promise<number> {
  const opened: number[] = [];
  const slot = (s: AttachedStdioSlot) => {
    if (typeof s !== 'object') return s;
    const fd = openSync(s.file, s.append ? 'a' : 'w', 0o600);
    opened.push(fd);
    return fd;
  };
  const stdio: StdioOptions = typeof call.stdio === 'string' || call.stdio === undefined ? (call.stdio ?? 'inherit') : call.stdio.map(slot);
  const scratch = podmanScratchDir();
  try {
    return await new Promise<number>((resolve) => {
      const child = spawn(podmanBinary, [...podmanGlobalArgs(), ...args], {
        stdio,
        cwd: scratch.dir,
        env: call.env ?? podmanEnv(process.env, call.passEnv),
      });
      call.onSpawn?.(child.pid);
      if (child.stdin && call.feedStdin) {
        child.stdin.on('error', () => undefined); // podman may end before its input does
        call.feedStdin(child.stdin);
      }
      const abort = () => child.kill('SIGTERM');
      call.signal?.addEventListener('abort', abort, { once: true });
      child.once('error', () => resolve(-1));
      child.once('close', (code) => {
        call.signal?.removeEventListener('abort', abort);
        resolve(typeof code === 'number' ? code : -1);
      });
    });
  } finally {
    for (const fd of opened) closeSync(fd);
    scratch.remove();
  }
}

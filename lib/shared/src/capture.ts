/**
 * Runs a short command to completion and captures what it printed: podman queries, systemd-run
 * --version, loginctl. node's child_process, not execa: loading execa (an ES module bundle of
 * ~250 KB) cost a tool ~30 ms here, more than the tool's own start, for features these calls
 * do not use. Never throws: a command that could not start, was killed or timed out says so
 * in the result.
 */
import { spawn } from 'node:child_process';

export interface CaptureOptions {
  /** The command's whole environment (nothing is inherited). */
  env: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
  cwd?: string;
  /** Killed with SIGTERM after this long, SIGKILL 5 s later (default: no limit). */
  timeoutMs?: number;
}

export interface Captured {
  /** The exit status; null when the command was killed by a signal or never started. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Output as UTF-8, one final newline removed (as execa did for these callers). */
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Why the command could not start (ENOENT, EACCES, ...). */
  spawnError?: string;
}

const stripFinalNewline = (text: string) => text.replace(/\r?\n$/, '');

export function captureCommand(file: string, args: readonly string[], options: CaptureOptions): Promise<Captured> {
  return new Promise((resolve) => {
    const child = spawn(file, args, {
      env: options.env,
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
          }, options.timeoutMs);
    let spawnError: string | undefined;
    child.on('error', (err) => {
      spawnError = err.message; // 'close' still follows
    });
    if (options.input !== undefined) {
      child.stdin?.on('error', () => undefined); // a command that exits without reading: EPIPE is not ours to report
      child.stdin?.end(options.input);
    }
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({
        exitCode: code,
        signal,
        stdout: stripFinalNewline(Buffer.concat(stdout).toString('utf8')),
        stderr: stripFinalNewline(Buffer.concat(stderr).toString('utf8')),
        timedOut,
        ...(spawnError === undefined ? {} : { spawnError }),
      });
    });
  });
}

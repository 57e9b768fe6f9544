/**
 * Everything nnp-probe reads from or does to the host, in one object, so the
 * core can be driven in-process by the launcher and by tests with other roots.
 * The executable always uses `realDeps()`: no flag or variable moves these paths.
 */
import { spawn } from 'node:child_process';
import { readFile, lstat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { captureCommand } from '@agent-sandbox/shared/capture';

export interface FileInfo {
  isDirectory(): boolean;
  isSocket(): boolean;
  isSymbolicLink(): boolean;
  uid: number;
}

export interface CommandOutcome {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface NnpDeps {
  /** /proc/self/status and /proc/self/cgroup are read through this. */
  readFile(path: string): Promise<string>;
  lstat(path: string): Promise<FileInfo>;
  /** Runs a short query (systemd-run --version, loginctl); never throws for a non-zero exit. */
  query(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CommandOutcome>;
  spawn: typeof spawn;
  env: NodeJS.ProcessEnv;
  uid: number;
  user: string;
  home: string;
  cwd: string;
  /** Where user runtime directories live: /run/user. */
  runtimeRoot: string;
  /** Where logind keeps linger flags: /var/lib/systemd/linger. */
  lingerDir: string;
  /** Where SIGINT/SIGTERM/SIGHUP arrive from (the process). */
  signals: SignalSource;
  /** Human text; goes to stderr in the CLI. */
  log(line: string): void;
}

async function query(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CommandOutcome> {
  const result = await captureCommand(file, args, { env, timeoutMs: 10_000 });
  return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.spawnError ?? result.stderr };
}

/** The host as it is. */
export function realDeps(overrides: Partial<NnpDeps> = {}): NnpDeps {
  const info = userInfo();
  return {
    readFile: (p) => readFile(p, 'utf8'),
    lstat: (p) => lstat(p),
    query,
    spawn,
    env: process.env,
    uid: info.uid,
    user: info.username,
    home: process.env['HOME'] || info.homedir,
    cwd: process.cwd(),
    runtimeRoot: '/run/user',
    lingerDir: '/var/lib/systemd/linger',
    signals: process,
    log: (line) => process.stderr.write(`${line}\n`),
    ...overrides,
  };
}

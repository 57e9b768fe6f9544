/**
 * Spawns one child with inherited stdio, forwards SIGINT/SIGTERM/SIGHUP through
 * `forward`, and resolves with how it ended. Shell conventions for what never ran:
 * 127 not found, 126 not executable; a death by signal N is 128+N.
 */
import { constants } from 'node:os';
import type { NnpDeps } from './deps.js';

export const forwardedSignals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export interface ChildEnd {
  /** The status a shell would report. */
  status: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** errno when the child could not be started (ENOENT, EACCES). */
  spawnError?: string;
  /** The last signal we forwarded, if any. */
  forwarded?: NodeJS.Signals;
}

export interface ChildOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Own process group: terminal signals reach only us, and we forward them. */
  detached: boolean;
  forward(signal: NodeJS.Signals, child: { kill(signal: NodeJS.Signals): boolean }): void | Promise<void>;
}

export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

export function runChild(deps: NnpDeps, file: string, args: string[], options: ChildOptions): Promise<ChildEnd> {
  return new Promise((resolve) => {
    let forwarded: NodeJS.Signals | undefined;
    const child = deps.spawn(file, args, { stdio: 'inherit', env: options.env, cwd: options.cwd, detached: options.detached });
    const listener = (signal: NodeJS.Signals) => {
      forwarded = signal;
      void Promise.resolve(options.forward(signal, child)).catch((err: Error) =>
        deps.log(`nnp-probe: forwarding ${signal} failed: ${err.message}`),
      );
    };
    for (const s of forwardedSignals) deps.signals.on(s, listener);
    let done = false;
    const finish = (end: ChildEnd) => {
      if (done) return;
      done = true;
      for (const s of forwardedSignals) deps.signals.off(s, listener);
      resolve(forwarded ? { ...end, forwarded } : end);
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      const status = err.code === 'ENOENT' ? 127 : 126;
      finish({ status, code: null, signal: null, spawnError: err.code ?? err.message });
    });
    child.once('exit', (code, signal) => {
      finish({ status: code ?? (signal ? signalStatus(signal) : 1), code, signal });
    });
  });
}

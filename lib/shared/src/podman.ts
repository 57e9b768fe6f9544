/**
 * The one way our code and our tests call podman: global args for this host's
 * runtime, a timeout, the expected exit code stated, and the call logged on
 * failure. (From podman's own system tests: every call through one helper.)
 */
import { execa, type Options } from 'execa';
import { podmanGlobalArgs } from './host-facts.js';
import { ToolError } from './tool-error.js';

export interface PodmanCall {
  /** Exit codes that are not a failure (default [0]); 'any' accepts every code. */
  expect?: number[] | 'any';
  timeoutMs?: number;
  input?: string;
  env?: Record<string, string | undefined>;
  /** Passed through to execa (stdio, cwd, ...). */
  execa?: Options;
}

export interface PodmanResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  argv: string[];
}

export const podmanBinary = process.env['AGENT_SANDBOX_PODMAN'] ?? 'podman';

export async function runPodman(args: string[], call: PodmanCall = {}): Promise<PodmanResult> {
  const argv = [...podmanGlobalArgs(), ...args];
  const result = await execa(podmanBinary, argv, {
    reject: false,
    timeout: call.timeoutMs ?? 120_000,
    ...(call.input === undefined ? {} : { input: call.input }),
    ...(call.env ? { env: call.env } : {}),
    ...(call.execa ?? {}),
  });
  const exitCode = typeof result.exitCode === 'number' ? result.exitCode : -1;
  const out: PodmanResult = {
    exitCode,
    stdout: String(result.stdout ?? ''),
    stderr: String(result.stderr ?? ''),
    argv: [podmanBinary, ...argv],
  };
  const expect = call.expect ?? [0];
  if (expect !== 'any' && !expect.includes(exitCode)) {
    const why = result.timedOut ? `timed out after ${call.timeoutMs ?? 120_000} ms` : `exit ${exitCode}`;
    throw new ToolError('internal', 'podman-failed', `podman ${args[0] ?? ''} failed (${why}): ${out.stderr.trim().split('\n').slice(-3).join(' | ')}`, {
      argv: out.argv,
      exitCode,
    });
  }
  return out;
}

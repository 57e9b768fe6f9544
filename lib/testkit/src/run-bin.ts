import { execa } from 'execa';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The monorepo's root, found from this file (lib/testkit/dist/run-bin.js). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export function binPath(tool: string): string {
  return path.join(repoRoot, 'tools', tool, 'bin', tool);
}

export interface BinRun {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as one JSON document, or undefined when it is not one. */
  json: any;
}

/**
 * Runs a tool's real executable, as a shell or Python caller would.
 * `input` is written to stdin (an object is JSON-encoded); stdin is otherwise empty.
 */
export async function runBin(
  tool: string,
  args: string[] = [],
  options: { input?: unknown; env?: Record<string, string | undefined>; cwd?: string; timeoutMs?: number; prefix?: readonly string[] } = {},
): Promise<BinRun> {
  const input = options.input === undefined ? '' : typeof options.input === 'string' ? options.input : JSON.stringify(options.input);
  // prefix: a command the tool runs under (e.g. privateHosts(): a mount namespace of its own).
  const [file, ...argv] = [...(options.prefix ?? []), binPath(tool), ...args];
  const result = await execa(file!, argv, {
    input,
    reject: false,
    timeout: options.timeoutMs ?? 120_000,
    env: options.env ?? {},
    extendEnv: options.env === undefined,
    cwd: options.cwd ?? repoRoot,
    stripFinalNewline: false,
  });
  let json: unknown;
  try {
    json = JSON.parse(String(result.stdout));
  } catch {
    json = undefined;
  }
  return {
    exitCode: typeof result.exitCode === 'number' ? result.exitCode : -1,
    stdout: String(result.stdout),
    stderr: String(result.stderr),
    json,
  };
}

/**
 * The CLI skeleton every tool uses: argv parsed by yargs from the tool's declarations
 * (parse-argv.ts, which also answers --help, --version and completion), one JSON document in
 * (stdin or flags) checked by its generated validator, one JSON document out, an exit code from
 * the table. `main` returns {output, exitCode} and never touches process stdio or exits; only
 * `runTool` (called by the bin shim) does.
 */
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { ExitCode } from './exit-codes.js';
import { parseJsonDocument, validateDocument } from './json-input.js';
import type { ParsedArgv } from './parse-argv.js';
import { forTerminal } from './terminal-text.js';
import { ToolError, toErrorDocument } from './tool-error.js';
import type { CommandSpec, FlagSpec, ToolSpec } from './tool-spec.js';

export type { CommandResult, CommandSpec, FlagSpec, FlagType, OptionSpec, RunContext, ToolSpec } from './tool-spec.js';
export type { ParsedArgv } from './parse-argv.js';
export { exitCodesHelp } from './exit-codes.js';

export interface MainIo {
  readStdin: () => Promise<string>;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}

export interface MainResult {
  output: string;
  exitCode: number;
}

function kebabToCamel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

function parseFlagValue(flag: FlagSpec, raw: unknown): unknown {
  if (flag.type !== 'json') return raw;
  if (typeof raw !== 'string') throw new ToolError('usage', 'bad-flag', `--${flag.flag}: expected a JSON value`);
  return parseJsonDocument(raw, `--${flag.flag}`);
}

/** The input document: from flags when any input flag is given, otherwise from stdin. */
async function assembleInput(command: CommandSpec, parsed: Record<string, unknown>, io: MainIo): Promise<unknown> {
  const given = (command.flags ?? []).filter((f) => parsed[f.flag] !== undefined);
  if (given.length > 0) {
    const input: Record<string, unknown> = {};
    for (const f of given) input[f.field] = parseFlagValue(f, parsed[f.flag]);
    return input;
  }
  if (io.stdinIsTTY) {
    throw new ToolError('usage', 'no-input', 'no input: pipe a JSON document on stdin or pass flags (see --help)');
  }
  const text = await io.readStdin();
  return text.trim() === '' ? {} : parseJsonDocument(text);
}

/**
 * Argv -> what to run. No argument at all is the default command with its defaults (or "name a
 * command"), without yargs: loading it is most of a tool's start, and shell callers mostly pipe
 * a document to a tool that takes no flag. Anything else goes through yargs, loaded then.
 */
export async function parseArgv(tool: ToolSpec, argv: string[]): Promise<ParsedArgv> {
  if (argv.length === 0) {
    const main = tool.commands.find((c) => c.name === '$0');
    if (!main) throw new ToolError('usage', 'bad-flag', 'name a command (see --help)');
    const values: Record<string, unknown> = {};
    for (const o of main.options ?? []) values[o.flag] = o.default;
    return { kind: 'command', command: main, values, rest: [] };
  }
  const parser = await import('./parse-argv.js');
  return await parser.parseArgv(tool, argv);
}

/** Runs one tool invocation; returns what to print and the exit code. */
export async function main(tool: ToolSpec, argv: string[], io: MainIo): Promise<MainResult> {
  try {
    const parsed = await parseArgv(tool, argv);
    if (parsed.kind === 'text') return { output: parsed.text, exitCode: 0 };
    const { command, values, rest } = parsed;
    const input = command.input ? validateDocument(command.input, await assembleInput(command, values, io)) : {};
    const options: Record<string, unknown> = {};
    for (const o of command.options ?? []) options[kebabToCamel(o.flag)] = values[o.flag];
    const result = await command.run(input, {
      env: io.env,
      log: io.log,
      rest,
      options,
      stdinIsTTY: io.stdinIsTTY,
      stdoutIsTTY: io.stdoutIsTTY,
    });
    const output = result.output === undefined ? '' : `${JSON.stringify(result.output)}\n`;
    return { output, exitCode: result.exitCode ?? 0 };
  } catch (err) {
    const { document, exitCode } = toErrorDocument(err);
    if (exitCode === ExitCode.internal && err instanceof Error && err.stack) io.log(err.stack);
    io.log(`${tool.name}: ${forTerminal(document.error.message)}`);
    return { output: `${JSON.stringify(document)}\n`, exitCode };
  }
}

/** Reads all of stdin. */
export async function readStdinText(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** Writes all of `text` to stdout or stderr; resolves once node has handed it on. */
export async function writeFd(fd: 1 | 2, text: string): Promise<void> {
  const stream = fd === 1 ? process.stdout : process.stderr;
  await new Promise<void>((resolve) => stream.write(text, () => resolve()));
}

/** Writes all of `text` to stdout. */
export const writeStdout = (text: string): Promise<void> => writeFd(1, text);

/** isatty(fd) for stdin, stdout or stderr (each getter builds that stream only). */
export function isTerminal(fd: 0 | 1 | 2): boolean {
  if (fd === 0) return Boolean(process.stdin.isTTY);
  return Boolean((fd === 1 ? process.stdout : process.stderr).isTTY);
}

/** The real process's stdio and environment, as `main` takes them. */
export function processIo(): MainIo {
  return {
    readStdin: readStdinText,
    stdinIsTTY: isTerminal(0),
    stdoutIsTTY: isTerminal(1),
    env: process.env,
    log: (line) => void writeFd(2, `${line}\n`),
  };
}

/**
 * The version of the package whose bin is running (`<package>/bin/<name>`, perhaps reached
 * through a link): what `--version` prints.
 */
export function packageVersion(binPath: string | undefined): string {
  try {
    const file = path.join(path.dirname(realpathSync(binPath ?? '')), '..', 'package.json');
    const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The only place that touches process stdio and the exit status; called by each bin shim. */
export async function runTool(tool: ToolSpec, io: MainIo = processIo()): Promise<void> {
  const argv = process.argv.slice(2);
  const versioned = argv.length === 0 || tool.version ? tool : { ...tool, version: packageVersion(process.argv[1]) };
  const { output, exitCode } = await main(versioned, argv, io);
  if (output) await writeStdout(output);
  process.exitCode = exitCode;
}

/**
 * The CLI skeleton every tool uses: flags parsed by node's util.parseArgs (argv.ts), --help
 * from the tool's declarations (help.ts), one JSON document in (stdin or flags) checked by its
 * generated validator, one JSON document out, an exit code from the table. `main` returns {output, exitCode} and never touches process stdio or
 * exits; only `runTool` (called by the bin shim) does.
 */
import { fstatSync, readFileSync, writeSync } from 'node:fs';
import { parseArgv } from './argv.js';
import { ExitCode } from './exit-codes.js';
import { helpText } from './help.js';
import { parseJsonDocument, validateDocument } from './json-input.js';
import { ToolError, toErrorDocument } from './tool-error.js';
import type { CommandSpec, FlagSpec, ToolSpec } from './tool-spec.js';

export type { CommandResult, CommandSpec, FlagSpec, FlagType, OptionSpec, RunContext, ToolSpec } from './tool-spec.js';
export { parseArgv, type ParsedArgv } from './argv.js';
export { exitTable, helpText } from './help.js';

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

/** Runs one tool invocation; returns what to print and the exit code. */
export async function main(tool: ToolSpec, argv: string[], io: MainIo): Promise<MainResult> {
  try {
    const parsed = parseArgv(tool, argv);
    if (parsed.help || !parsed.command) return { output: helpText(tool, parsed.command), exitCode: 0 };
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
    io.log(`${tool.name}: ${document.error.message}`);
    return { output: `${JSON.stringify(document)}\n`, exitCode };
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads all of stdin. A blocking read of fd 0 is the common case and costs nothing to set
 * up; touching process.stdin builds a stream and loads node's stream machinery (~4 ms of
 * a tool's ~30 ms start). A stdin that is non-blocking (EAGAIN: a pipe a node parent left
 * in non-blocking mode) or otherwise unreadable that way goes through process.stdin.
 */
export async function readStdinText(): Promise<string> {
  try {
    return readFileSync(0, 'utf8');
  } catch {
    return await readAll(process.stdin);
  }
}

/**
 * Writes all of `text` to fd 1 or 2 with write(2): building process.stdout or process.stderr
 * loads node's stream machinery (~2-5 ms of a tool's start). What a non-blocking fd refuses
 * (EAGAIN: a full pipe a node parent left non-blocking) goes through the stream instead.
 */
export async function writeFd(fd: 1 | 2, text: string): Promise<void> {
  const bytes = Buffer.from(text);
  let written = 0;
  try {
    while (written < bytes.length) written += writeSync(fd, bytes, written);
    return;
  } catch {
    // EAGAIN, or an fd that write(2) cannot use: the stream handles both
  }
  const stream = fd === 1 ? process.stdout : process.stderr;
  await new Promise<void>((resolve) => stream.write(bytes.subarray(written), () => resolve()));
}

/** Writes all of `text` to stdout (see writeFd). */
export const writeStdout = (text: string): Promise<void> => writeFd(1, text);

/**
 * isatty(fd) for 0, 1 or 2, building node's stdio stream for fd (which loads node:tty, node:net
 * and the stream machinery, ~5 ms) only when fd is a character device: a pipe, socket or
 * file is never a terminal, /dev/null is a character device that is not one.
 */
export function isTerminal(fd: 0 | 1 | 2): boolean {
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false;
  } catch {
    return false; // a closed fd is not a terminal
  }
  // One getter only: each of process.stdin/stdout/stderr builds its stream when first read.
  if (fd === 0) return Boolean(process.stdin.isTTY);
  return Boolean((fd === 1 ? process.stdout : process.stderr).isTTY);
}

/** The real process's stdio and environment, as `main` takes them. */
export function processIo(): MainIo {
  return {
    readStdin: readStdinText,
    // Not process.stdin.isTTY: building the stream objects costs more than the answer.
    stdinIsTTY: isTerminal(0),
    stdoutIsTTY: isTerminal(1),
    env: process.env,
    log: (line) => void writeFd(2, `${line}\n`),
  };
}

/** The only place that touches process stdio and the exit status; called by each bin shim. */
export async function runTool(tool: ToolSpec, io: MainIo = processIo()): Promise<void> {
  const { output, exitCode } = await main(tool, process.argv.slice(2), io);
  if (output) await writeStdout(output);
  process.exitCode = exitCode;
}

/**
 * The CLI skeleton every tool uses: yargs for flags and --help, one JSON
 * document in (stdin or flags), one JSON document out, an exit code from the
 * table. `main` returns {output, exitCode} and never touches process stdio or
 * exits; only `runTool` (called by the bin shim) does.
 */
import { fstatSync, readFileSync, writeSync } from 'node:fs';
import type { Static, TSchema } from '@sinclair/typebox';
import { ExitCode } from './exit-codes.js';
import { parseJsonDocument, validateDocument } from './json-input.js';
import { ToolError, toErrorDocument } from './tool-error.js';

export type FlagType = 'string' | 'boolean' | 'number' | 'array' | 'json';

/** A flag that fills one field of the input document (`--session-id` -> `sessionId`). */
export interface FlagSpec {
  flag: string;
  field: string;
  type: FlagType;
  describe: string;
}

/** What a command may do besides returning a value; passed in so cores stay testable. */
export interface RunContext {
  env: NodeJS.ProcessEnv;
  /** Human text for the user; goes to stderr. */
  log: (line: string) => void;
  /** Arguments after `--`, for commands that run a command. */
  rest: string[];
  /** Parsed flags that are not input fields (for example --dry-run). */
  options: Record<string, unknown>;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
}

export interface CommandResult {
  /** The JSON document for stdout; absent when the command's own child owned stdout. */
  output?: unknown;
  exitCode?: number;
}

export interface CommandSpec<S extends TSchema = TSchema> {
  /** Subcommand name; '$0' for a tool without subcommands. */
  name: string;
  describe: string;
  /** Schema of the input document; absent when the command takes no JSON input. */
  input?: S;
  flags?: FlagSpec[];
  /** Flags that are options of the run, not input fields. */
  options?: { flag: string; type: 'string' | 'boolean' | 'number'; describe: string; default?: unknown }[];
  /** True when the command takes `-- CMD...`. */
  takesCommand?: boolean;
  examples?: [string, string][];
  run(input: Static<S>, ctx: RunContext): Promise<CommandResult>;
}

export interface ToolSpec {
  name: string;
  summary: string;
  commands: CommandSpec<any>[];
  epilog?: string;
}

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

const exitTable = `Exit codes: 0..255 the contained command's own status; 80 usage; 81 node unreachable;
82 image absent; 83 container failed to start; 84 user manager missing (loginctl enable-linger);
85 credential; 86 unsafe path; 87 git metadata not mountable; 88 limits not enforceable;
89 systemd-run failed; 90 refused by policy; 91 internal error; 92 workspace busy.`;

function kebabToCamel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

type Parsed = Record<string, unknown> & { _: (string | number)[]; '--'?: (string | number)[] };

/**
 * The common invocation without yargs (loading and configuring it costs about as much as
 * node's own start): `[command] (--flag value | --flag=value | --boolean)... [-- rest...]`,
 * each flag one this command declares, given once. Anything else (--help, short flags,
 * positionals, array flags, a value starting with "-" or empty, a boolean followed by
 * true/false, a number that is not plain digits) returns undefined and yargs parses it, so
 * every help text and refusal stays yargs' own. The result has the shape yargs gives.
 */
export function fastParse(tool: ToolSpec, argv: string[]): Parsed | undefined {
  const end = argv.indexOf('--');
  const head = end < 0 ? argv : argv.slice(0, end);
  let command = tool.commands.find((c) => c.name === '$0');
  let i = 0;
  const first = head[0];
  if (first !== undefined && !first.startsWith('-')) {
    command = tool.commands.find((c) => c.name === first && c.name !== '$0');
    i = 1;
  }
  if (!command) return undefined;
  const types = new Map<string, string>();
  for (const f of command.flags ?? []) types.set(f.flag, f.type === 'json' ? 'string' : f.type);
  for (const o of command.options ?? []) types.set(o.flag, o.type);
  const parsed: Parsed = { _: command.name === '$0' ? [] : [command.name] };
  for (; i < head.length; i += 1) {
    const token = head[i]!;
    if (!token.startsWith('--')) return undefined;
    const eq = token.indexOf('=');
    const flag = token.slice(2, eq < 0 ? undefined : eq);
    const type = types.get(flag);
    if (type === undefined || type === 'array' || flag === 'help' || Object.hasOwn(parsed, flag)) return undefined;
    if (type === 'boolean') {
      const next = head[i + 1];
      if (eq >= 0 || next === 'true' || next === 'false') return undefined;
      parsed[flag] = true;
      continue;
    }
    const value = eq < 0 ? head[(i += 1)] : token.slice(eq + 1);
    if (value === undefined || value === '' || value.startsWith('-')) return undefined;
    if (type === 'number' && !/^(0|[1-9][0-9]{0,14})$/.test(value)) return undefined;
    parsed[flag] = type === 'number' ? Number(value) : value;
  }
  for (const o of command.options ?? []) if (o.default !== undefined && !Object.hasOwn(parsed, o.flag)) parsed[o.flag] = o.default;
  if (end >= 0) parsed['--'] = argv.slice(end + 1);
  return parsed;
}

/** yargs, loaded only when the fast path declines (help, refusals, unusual argv). */
export async function yargsParse(tool: ToolSpec, argv: string[]): Promise<{ parsed: Parsed; help: string }> {
  const { default: yargs } = await import('yargs');
  return await new Promise((resolve, reject) => {
    try {
      buildParser(yargs, tool, argv).parse(argv, {}, (err: Error | undefined, args: unknown, output: string) => {
        if (err) reject(err instanceof ToolError ? err : new ToolError('usage', 'bad-flag', err.message));
        resolve({ parsed: args as Parsed, help: output });
      });
    } catch (err) {
      reject(err);
    }
  });
}

function buildParser(yargs: typeof import('yargs').default, tool: ToolSpec, argv: string[]) {
  let parser = yargs(argv)
    .scriptName(tool.name)
    .usage(`${tool.name}: ${tool.summary}`)
    .strict()
    .help('help')
    .alias('help', 'h')
    .version(false)
    .exitProcess(false)
    .wrap(Math.min(100, process.stdout.columns || 100))
    .parserConfiguration({ 'populate--': true, 'camel-case-expansion': false, 'boolean-negation': false })
    .epilog([tool.epilog, exitTable].filter(Boolean).join('\n\n'))
    .fail((message, error) => {
      throw error instanceof ToolError ? error : new ToolError('usage', 'bad-flag', message || String(error));
    });
  for (const command of tool.commands) {
    const builder = (y: any) => {
      for (const f of command.flags ?? []) {
        y = y.option(f.flag, { type: f.type === 'json' ? 'string' : f.type, describe: f.describe });
      }
      for (const o of command.options ?? []) {
        y = y.option(o.flag, { type: o.type, describe: o.describe, default: o.default });
      }
      for (const [ex, what] of command.examples ?? []) y = y.example(ex, what);
      return y;
    };
    const signature = command.name === '$0' ? '$0' : command.name;
    parser = parser.command(command.takesCommand ? `${signature} [command..]` : signature, command.describe, builder);
  }
  if (!tool.commands.some((c) => c.name === '$0')) parser = parser.demandCommand(1, 'name a command (see --help)');
  return parser;
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
    const fast = fastParse(tool, argv);
    const { parsed, help } = fast ? { parsed: fast, help: '' } : await yargsParse(tool, argv);
    if (help) return { output: help.endsWith('\n') ? help : `${help}\n`, exitCode: 0 };

    const sub = String(parsed._[0] ?? '');
    const command = tool.commands.find((c) => c.name === sub) ?? tool.commands.find((c) => c.name === '$0');
    if (!command) throw new ToolError('usage', 'unknown-command', `unknown command "${sub}" (see --help)`);
    const positional = command.name === '$0' ? parsed._ : parsed._.slice(1);
    const rest = [...((parsed['command'] as string[] | undefined) ?? []), ...(parsed['--'] ?? [])].map(String);
    if (!command.takesCommand && positional.length > 0) {
      throw new ToolError('usage', 'bad-flag', `unexpected argument "${positional[0]}" (see --help)`);
    }
    if (command.takesCommand && positional.length > 0) rest.unshift(...positional.map(String));

    const input = command.input ? validateDocument(command.input, await assembleInput(command, parsed, io)) : {};
    const options: Record<string, unknown> = {};
    for (const o of command.options ?? []) options[kebabToCamel(o.flag)] = parsed[o.flag];
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

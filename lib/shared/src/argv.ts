/**
 * Argv -> the command, its flag values and its arguments, with node's own util.parseArgs
 * (strict: an unknown flag, a missing value or a stray argument is a usage error, 80).
 * Not yargs: loading it cost every tool start ~40 ms, more than node's own start (measured,
 * docs/performance.md); parseArgs is part of node.
 *
 * Flags behave as they did with yargs: `--flag value` and `--flag=value`; a flag given twice
 * gives an array (which the schema then refuses where one value is expected); a boolean flag
 * is true when present and also takes `true`/`false` (`--remove=false`, `--remove false`), the
 * only way to turn off a flag that defaults to true.
 */
import { parseArgs } from 'node:util';
import { ToolError } from './tool-error.js';
import type { CommandSpec, FlagType, ToolSpec } from './tool-spec.js';

export interface ParsedArgv {
  /** undefined only with help: the tool's own help, not a command's. */
  command: CommandSpec | undefined;
  help: boolean;
  /** Flag values by flag name (kebab-case), with the options' defaults. */
  values: Record<string, unknown>;
  /** Arguments that are not flags (before and after `--`), for commands that take a command. */
  rest: string[];
}

type ParseOptions = NonNullable<Parameters<typeof parseArgs>[0]>['options'];
type Token = { kind: string; index: number; name?: string; value?: string | undefined; inlineValue?: boolean | undefined };

function flagTypes(command: CommandSpec): Map<string, FlagType> {
  const types = new Map<string, FlagType>();
  for (const f of command.flags ?? []) types.set(f.flag, f.type);
  for (const o of command.options ?? []) types.set(o.flag, o.type);
  return types;
}

/** `--help` or `-h` before `--` asks for help, whatever else argv holds (as with yargs). */
function asksForHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** parseArgs' refusal, without its advice on positionals (no command here takes one starting with "-"). */
function refusal(err: unknown): ToolError {
  const message = err instanceof Error ? err.message : String(err);
  return new ToolError('usage', 'bad-flag', `${message.replace(/\. To specify a positional argument.*$/s, '').replace(/\n/g, ' ')} (see --help)`);
}

function parse(args: string[], options: ParseOptions) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true, tokens: true });
  } catch (err) {
    throw refusal(err);
  }
}

/**
 * The `true`/`false` a boolean flag carries (`--remove=false`, `--remove false`), which strict
 * parseArgs does not accept; those arguments are taken out of argv before it parses the rest.
 */
function booleanWords(args: string[], options: ParseOptions, types: Map<string, FlagType>) {
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const words = new Map<string, boolean>();
  const taken = new Set<number>();
  (tokens as Token[]).forEach((token, i) => {
    if (token.kind !== 'option' || types.get(token.name ?? '') !== 'boolean') return;
    const next = tokens[i + 1] as Token | undefined;
    const word = token.inlineValue ? token.value : next?.kind === 'positional' ? next.value : undefined;
    if (word !== 'true' && word !== 'false') return;
    words.set(token.name!, word === 'true');
    taken.add(token.index);
    if (!token.inlineValue) taken.add(next!.index);
  });
  return { words, args: args.filter((_, i) => !taken.has(i)) };
}

/** One flag's parsed value in the shape yargs gave: a scalar, or an array when repeated. */
function flagValue(type: FlagType, raw: unknown): unknown {
  if (type === 'boolean' || raw === undefined) return raw;
  const values = (raw as string[]).map((v) => (type === 'number' ? Number(v) : v));
  return type === 'array' || values.length > 1 ? values : values[0];
}

/** When argv names no command the tool has: its help, or a usage error. */
function withoutCommand(argv: string[]): ParsedArgv {
  if (asksForHelp(argv)) return { command: undefined, help: true, values: {}, rest: [] };
  const { positionals } = parse(argv, { help: { type: 'boolean', short: 'h' } });
  if (positionals.length > 0) throw new ToolError('usage', 'bad-flag', `unknown command "${positionals[0]}" (see --help)`);
  throw new ToolError('usage', 'bad-flag', 'name a command (see --help)');
}

export function parseArgv(tool: ToolSpec, argv: string[]): ParsedArgv {
  const named = tool.commands.find((c) => c.name !== '$0' && c.name === argv[0]);
  const command = named ?? tool.commands.find((c) => c.name === '$0');
  if (!command) return withoutCommand(argv);
  const args = named ? argv.slice(1) : argv;
  if (asksForHelp(args)) return { command: named, help: true, values: {}, rest: [] };

  const types = flagTypes(command);
  const options: ParseOptions = {};
  for (const [flag, type] of types) options[flag] = type === 'boolean' ? { type: 'boolean' } : { type: 'string', multiple: true };
  const { words, args: remaining } = booleanWords(args, options, types);
  const { values: parsedValues, tokens } = parse(remaining, options);
  const raw = parsedValues as Record<string, unknown>;

  const values: Record<string, unknown> = {};
  for (const [flag, type] of types) values[flag] = words.get(flag) ?? flagValue(type, raw[flag]);
  for (const o of command.options ?? []) if (values[o.flag] === undefined && o.default !== undefined) values[o.flag] = o.default;

  const terminator = tokens.findIndex((t) => t.kind === 'option-terminator');
  const positional = tokens.filter((t, i) => t.kind === 'positional' && (terminator < 0 || i < terminator));
  if (!command.takesCommand && positional.length > 0) {
    const first = positional[0] as { value: string };
    throw new ToolError('usage', 'bad-flag', `unexpected argument "${first.value}" (see --help)`);
  }
  const rest = tokens.flatMap((t) => (t.kind === 'positional' ? [t.value] : []));
  return { command, help: false, values, rest };
}

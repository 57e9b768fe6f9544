/**
 * Argv -> the command, its flag values and its arguments, parsed by yargs configured from the
 * tool's own declarations (tool-spec.ts): subcommands, `--help` from the same option table,
 * `--version`, a suggestion on a typo of a command (recommendCommands) and, for a tool with
 * commands, `completion` (a bash completion script). cli.ts loads this module only when argv is not empty: loading yargs is
 * most of a tool's start (docs/performance.md).
 *
 * What callers rely on, kept from the parser before it:
 * - `--flag value` and `--flag=value`; a flag given twice gives an array (which the schema then
 *   refuses where one value is expected); a boolean is true when present and also takes
 *   `true`/`false` (`--remove=false`, `--remove false`); there is no `--no-x` negation;
 * - an unknown flag, a missing value, a stray argument or an unknown command is a usage error
 *   (80, bad-flag);
 * - flags before `--` are the tool's wherever they stand (`workspace new ID --repo DIR`), so
 *   yargs does not halt at the first argument; everything after `--` is the contained command's:
 *   never read as a flag, as --help or --version, and never turned into a number.
 */
import yargs, { type Argv } from 'yargs';
import { exitCodesHelp } from './exit-codes.js';
import { ToolError } from './tool-error.js';
import type { CommandSpec, ToolSpec } from './tool-spec.js';

export type ParsedArgv =
  /** A command to run with its flag values (by flag name, with the options' defaults) and its arguments (before and after `--`). */
  | { kind: 'command'; command: CommandSpec; values: Record<string, unknown>; rest: string[] }
  /** Text yargs answered with instead: help, the version, the completion script or completions. */
  | { kind: 'text'; text: string };

const width = 100;

/** yargs' parser settings; each is spelled out, defaults included, because each is a promise above. */
const parserConfiguration = {
  'populate--': true, // after `--`: argv['--'], verbatim
  'halt-at-non-option': false, // flags after an argument are still the tool's
  'unknown-options-as-args': false, // an unknown flag is refused, never handed on
  'parse-positional-numbers': false, // arguments (and the command after `--`) stay strings
  'parse-numbers': false, // a value is a number only where its flag is declared a number
  'camel-case-expansion': false, // one key per flag, as declared
  'boolean-negation': false, // no --no-x
  'dot-notation': false, // --a.b is an unknown flag, not an object
  'duplicate-arguments-array': true, // a repeated flag gives an array
  'greedy-arrays': false, // --env A B: B is an argument
} as const;

/** A boolean flag's inline value other than true/false (`--remove=yes`), which yargs would read as false. */
function checkBooleanWords(command: CommandSpec, args: string[]): void {
  const booleans = new Set([...(command.flags ?? []), ...(command.options ?? [])].filter((f) => f.type === 'boolean').map((f) => f.flag));
  const end = args.indexOf('--');
  for (const arg of end < 0 ? args : args.slice(0, end)) {
    const match = /^--([^=]+)=(.*)$/s.exec(arg);
    if (match && booleans.has(match[1]!) && match[2] !== 'true' && match[2] !== 'false') {
      throw new ToolError('usage', 'bad-flag', `--${match[1]}: expected true or false, got ${JSON.stringify(match[2])} (see --help)`);
    }
  }
}

/** The first argument when it is not a flag and names none of the tool's commands. */
function unknownCommand(tool: ToolSpec, args: string[]): string | undefined {
  const first = args[0];
  if (first === undefined || first.startsWith('-') || tool.commands.some((c) => c.name === '$0')) return undefined;
  return tool.commands.some((c) => c.name === first) || first === 'completion' ? undefined : first;
}

/** yargs names an unknown flag without its dashes ("Unknown argument: force"): name it as it was typed. */
function asTyped(args: string[], key: string): string {
  const typed = args.find((a) => a === `--${key}` || a.startsWith(`--${key}=`) || a === `-${key}`);
  return typed === undefined ? JSON.stringify(key) : typed.replace(/=.*$/s, '');
}

/** yargs' refusal as a usage error; its message is English (the locale is fixed) and names the cause. */
function refusal(tool: ToolSpec, args: string[], message: string | undefined, err: Error | undefined): ToolError {
  if (err instanceof ToolError) return err;
  let why = (message || err?.message || 'cannot read the arguments').replace(/\s+/g, ' ').trim();
  const unknownArguments = /^Unknown arguments?: (.*)$/.exec(why);
  if (unknownArguments)
    why = `unknown argument${unknownArguments[1]!.includes(', ') ? 's' : ''}: ${unknownArguments[1]!
      .split(', ')
      .map((key) => asTyped(args, key))
      .join(', ')}`;
  const command = unknownCommand(tool, args);
  if (command !== undefined) why = /^Did you mean/.test(why) ? `unknown command "${command}": ${why}` : `unknown command "${command}"`;
  return new ToolError('usage', 'bad-flag', `${why} (see --help)`);
}

/** One command's flags and examples, declared on yargs when that command is chosen (or its help shown). */
function declareCommand(y: Argv, command: CommandSpec): Argv {
  for (const f of command.flags ?? []) {
    const type = f.type === 'json' ? 'string' : f.type;
    y.option(f.flag, { type, describe: f.describe, requiresArg: type !== 'boolean' });
  }
  for (const o of command.options ?? []) {
    y.option(o.flag, {
      type: o.type,
      describe: o.describe,
      requiresArg: o.type !== 'boolean',
      ...(o.default === undefined ? {} : { default: o.default }),
    });
  }
  if (command.takesCommand)
    y.positional('command', { type: 'string', array: true, describe: 'arguments; those after -- are passed on untouched' });
  for (const [example, what] of command.examples ?? []) y.example(example, what);
  return y;
}

/** The yargs instance for a tool; `chose` hears which command ran and its parsed argv. */
function buildParser(tool: ToolSpec, args: string[], chose: (command: CommandSpec, argv: Record<string, unknown>) => void): Argv {
  const parser = yargs(args)
    .scriptName(tool.name)
    .usage(`${tool.name}: ${tool.summary}`)
    .parserConfiguration(parserConfiguration)
    .detectLocale(false)
    .strict()
    .recommendCommands()
    .help('help')
    .alias('help', 'h')
    .version('version', 'Show version number', tool.version ?? 'unknown')
    .exitProcess(false)
    .wrap(width)
    .epilog([tool.epilog, exitCodesHelp()].filter(Boolean).join('\n\n'))
    .fail((message, err) => {
      throw refusal(tool, args, message, err);
    });
  for (const command of tool.commands) {
    const name = command.name === '$0' ? '$0' : command.name;
    parser.command(
      command.takesCommand ? `${name} [command..]` : name,
      command.describe,
      (y) => declareCommand(y, command),
      (argv) => chose(command, argv),
    );
  }
  // A tool with commands also gets `completion`. yargs' completion does not see a default
  // command's flags, and `completion` would there be the contained command's first word.
  if (!tool.commands.some((c) => c.name === '$0')) {
    parser
      .completion('completion', 'print a bash completion script for this tool (source it from ~/.bashrc)')
      .demandCommand(1, 'name a command');
  }
  return parser;
}

/** The declared flags' values, the options' defaults included. */
function valuesOf(command: CommandSpec, argv: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const f of [...(command.flags ?? []), ...(command.options ?? [])]) values[f.flag] = argv[f.flag];
  return values;
}

/** Parses argv against the tool's declarations; refusals are ToolErrors (80, bad-flag). */
export async function parseArgv(tool: ToolSpec, args: string[]): Promise<ParsedArgv> {
  let chosen: { command: CommandSpec; argv: Record<string, unknown> } | undefined;
  const parser = buildParser(tool, args, (command, argv) => {
    chosen = { command, argv };
  });
  // yargs answers through the callback, synchronously; a completion request (`completion`'s
  // script asks at each <Tab>) calls it twice, the last time with the completions.
  let answer: { err?: Error; text: string } = { text: '' };
  try {
    await parser.parse(args, {}, (err, _argv, output) => {
      answer = { ...(err ? { err } : {}), text: output };
    });
  } catch (err) {
    answer = { err: err as Error, text: '' };
  }
  if (answer.err) throw refusal(tool, args, undefined, answer.err);
  if (!chosen) {
    if (answer.text === '') throw new ToolError('usage', 'bad-flag', 'name a command (see --help)');
    return { kind: 'text', text: answer.text.endsWith('\n') ? answer.text : `${answer.text}\n` };
  }
  const { command, argv } = chosen;
  checkBooleanWords(command, args);
  const positional = ((argv['command'] as unknown[] | undefined) ?? []).map(String);
  const rest = [...positional, ...((argv['--'] as unknown[] | undefined) ?? []).map(String)];
  return { kind: 'command', command, values: valuesOf(command, argv), rest };
}

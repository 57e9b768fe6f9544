/**
 * What a tool declares: its commands, their flags and input validators. The skeleton (cli.ts)
 * runs it; yargs parses argv and prints --help from these same declarations (parse-argv.ts).
 */
import type { Validator } from './json-input.js';

export type FlagType = 'string' | 'boolean' | 'number' | 'array' | 'json';

/** A flag that fills one field of the input document (`--session-id` -> `sessionId`). */
export interface FlagSpec {
  flag: string;
  field: string;
  type: FlagType;
  describe: string;
}

/** A flag that is an option of the run, not an input field (for example --dry-run). */
export interface OptionSpec {
  flag: string;
  type: 'string' | 'boolean' | 'number';
  describe: string;
  default?: unknown;
}

/** What a command may do besides returning a value; passed in so cores stay testable. */
export interface RunContext {
  env: NodeJS.ProcessEnv;
  /** Human text for the user; goes to stderr. */
  log: (line: string) => void;
  /** Arguments after `--`, for commands that run a command. */
  rest: string[];
  /** Parsed flags that are not input fields (for example --dry-run), by camelCase name. */
  options: Record<string, unknown>;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
}

export interface CommandResult {
  /** The JSON document for stdout; absent when the command's own child owned stdout. */
  output?: unknown;
  exitCode?: number;
}

export interface CommandSpec<T = any> {
  /** Subcommand name; '$0' for a tool without subcommands. */
  name: string;
  describe: string;
  /** Validator of the input document (@agent-sandbox/shared/validators/*); absent: no JSON input. */
  input?: Validator<T>;
  flags?: FlagSpec[];
  options?: OptionSpec[];
  /** True when the command takes `-- CMD...`. */
  takesCommand?: boolean;
  examples?: [string, string][];
  run(input: T, ctx: RunContext): Promise<CommandResult>;
}

export interface ToolSpec {
  name: string;
  /** What `--version` prints: the package's version (runTool reads it from the package beside the bin). */
  version?: string;
  summary: string;
  commands: CommandSpec<any>[];
  epilog?: string;
}

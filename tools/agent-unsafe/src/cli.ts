import { ToolError, runTool, type CommandSpec, type ToolSpec } from '@agent-sandbox/shared';
import { openHatch, launchAttached, realLimitDeps, type HatchRequest } from './hatch.js';
import { realHost } from './host-view.js';
import { defaultLimits, gib } from './limits.js';
import { runtimeNames, runtimes, type Runtime } from './runtimes.js';

const units: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: gib, T: 1024 * gib };

/** "12G", "512M", "1073741824" -> bytes; anything else is a usage error naming the flag. */
export function parseBytes(flag: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+)([KMGT]?)i?B?$/i.exec(String(value));
  const unit = match ? units[(match[2] ?? '').toUpperCase()] : undefined;
  if (!match || unit === undefined || Number(match[1]) <= 0) {
    throw new ToolError('usage', 'bad-flag', `--${flag}: expected bytes like 12G or 512M, got "${String(value)}"`);
  }
  return Number(match[1]) * unit;
}

function parseTasks(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new ToolError('usage', 'bad-flag', `--tasks: expected a positive integer, got ${String(value)}`);
  }
  return value;
}

/** Options normalised in one place. */
function hatchRequest(runtime: Runtime, rest: string[], options: Record<string, unknown>): HatchRequest {
  const limits = {
    memoryBytes: parseBytes('memory', options['memory']),
    tasks: parseTasks(options['tasks']),
    addressSpaceBytes: parseBytes('address-space', options['addressSpace']),
  };
  const given = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
  return { runtime, args: rest, dryRun: options['dryRun'] === true, limits: given };
}

function command(runtime: Runtime): CommandSpec {
  const wrapper = runtimes[runtime].wrapper;
  return {
    name: runtime,
    describe: `run ${runtime} on this host, uncontained (a human at a terminal only; also: ${wrapper})`,
    takesCommand: true,
    options: [
      { flag: 'dry-run', type: 'boolean', describe: 'run every check, print the launch plan as JSON, start nothing' },
      {
        flag: 'memory',
        type: 'string',
        describe: `MemoryMax of the scope (default ${defaultLimits.memoryBytes / gib}G; user manager only)`,
      },
      {
        flag: 'tasks',
        type: 'number',
        describe: `TasksMax, or processes added to the user's count for RLIMIT_NPROC (default ${defaultLimits.tasks})`,
      },
      {
        flag: 'address-space',
        type: 'string',
        describe: `RLIMIT_AS per process without a user manager (default ${defaultLimits.addressSpaceBytes / gib}G)`,
      },
    ],
    examples: [[`agent-unsafe ${runtime} -- --help`, `start ${runtime} uncontained, passing --help to it`]],
    run: async (_input, ctx) => {
      const result = await openHatch(hatchRequest(runtime, ctx.rest, ctx.options), {
        env: ctx.env,
        stdinIsTTY: ctx.stdinIsTTY,
        stdoutIsTTY: ctx.stdoutIsTTY,
        host: realHost,
        parentPid: process.ppid,
        limitDeps: realLimitDeps(ctx.env),
        log: ctx.log,
        launch: launchAttached,
      });
      return result;
    },
  };
}

export const tool: ToolSpec = {
  name: 'agent-unsafe',
  summary: 'the human-only hatch: run an agent CLI directly on this host, uncontained, with rlimits or a systemd scope',
  commands: runtimeNames.map(command),
  epilog: [
    'Refuses with exit 90 and {"ok":false,"error":{"code","message","reasons"}} on stdout when stdin or stdout',
    'is not a terminal, inside a container, when an agent marker variable is set, or when an agent CLI is an',
    'ancestor. Nothing turns these checks off. Otherwise the agent owns the terminal and its exit status is',
    "agent-unsafe's own. The containerized path (agent-sandbox) never falls back to this hatch.",
  ].join(' '),
};

export const run = () => runTool(tool);

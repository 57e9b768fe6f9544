import { ToolError, runTool, type ToolSpec } from '@agent-sandbox/shared';
import { RunPlan } from '@agent-sandbox/shared/validators/sandbox-run';
import { buildRunArgv } from './argv.js';
import { resolvePlan } from './plan.js';
import { preflight } from './preflight.js';
import { runPlan } from './run-plan.js';

/** A command after `--` fills `command`; giving it both ways is ambiguous. */
function withCommand(input: Record<string, unknown>, rest: string[]): Record<string, unknown> {
  if (rest.length === 0) return input;
  if (input['command'] !== undefined) {
    throw new ToolError('usage', 'command-twice', 'input.command: given both in the plan and after "--"; give it once', {
      field: 'input.command',
    });
  }
  return { ...input, command: rest };
}

export const tool: ToolSpec = {
  name: 'sandbox-run',
  summary: 'run one plan in one podman container: hardening flags, limits, mounts; the exit status passes through',
  commands: [
    {
      name: '$0',
      describe: 'run a plan from stdin (or flags); the command after -- or in "command"',
      input: RunPlan,
      takesCommand: true,
      flags: [
        { flag: 'image', field: 'image', type: 'string', describe: 'local image (never pulled)' },
        { flag: 'session-id', field: 'sessionId', type: 'string', describe: 'session id (container agent-sandbox-<id>)' },
        { flag: 'name', field: 'name', type: 'string', describe: 'container name' },
        { flag: 'cgroup-parent', field: 'cgroupParent', type: 'string', describe: 'caller-owned parent cgroup' },
        { flag: 'network', field: 'network', type: 'string', describe: 'none (default) or ns:/run/netns/<name>' },
        { flag: 'mounts', field: 'mounts', type: 'json', describe: 'JSON array of {source,destination,readOnly,overlay?: {upper,work}}' },
        { flag: 'limits', field: 'limits', type: 'json', describe: 'JSON {memory,memorySwap,pids,cpus,cpuShares}' },
        { flag: 'env', field: 'env', type: 'array', describe: 'names of variables to pass' },
        { flag: 'tty', field: 'tty', type: 'boolean', describe: 'allocate a terminal' },
        { flag: 'interactive', field: 'interactive', type: 'boolean', describe: 'keep stdin attached (default true)' },
        { flag: 'workdir', field: 'workdir', type: 'string', describe: 'working directory inside' },
        { flag: 'user', field: 'user', type: 'string', describe: 'uid[:gid] (default 1000:1000)' },
        { flag: 'remove', field: 'remove', type: 'boolean', describe: '--rm (default true)' },
        { flag: 'read-only-root', field: 'readOnlyRoot', type: 'boolean', describe: 'read-only image root (default true)' },
      ],
      options: [{ flag: 'dry-run', type: 'boolean', describe: 'print {"ok":true,"argv":[...]} and start nothing' }],
      examples: [
        [
          `echo '{"image":"localhost/agent-sandbox-busybox:latest","sessionId":"s1","limits":{"memory":"512m","memorySwap":"512m","pids":64,"cpus":1,"cpuShares":256},"command":["id"]}' | sandbox-run`,
          'run id in a container',
        ],
        ['sandbox-run --dry-run < plan.json', 'print the podman argv only'],
      ],
      run: async (input, ctx) => {
        const plan = resolvePlan(withCommand(input as Record<string, unknown>, ctx.rest));
        if (ctx.options['dryRun']) {
          return { output: { ok: true, argv: buildRunArgv(plan, await preflight(plan)) } };
        }
        const outcome = await runPlan(plan, { log: ctx.log });
        return { exitCode: outcome.exitCode };
      },
    },
  ],
  epilog:
    'Runs podman with --cap-drop=ALL, no-new-privileges, the seccomp profile beside the tool (seccomp/agent-sandbox.json:\n' +
    "no namespaces inside), the plan's limits and mounts, --network=none by default.\n" +
    "Stdout and stderr belong to the contained command; its exit status is sandbox-run's. Refusals before anything\n" +
    'starts print {"ok":false,"error":{...}}: 80 bad plan, 82 image absent, 83 runtime cannot start containers\n' +
    'or the seccomp profile is missing or weakened,\n' +
    '86 mount source missing, 88 limits this host cannot enforce (rootless on cgroup v1, controllers not delegated).',
};

export const run = () => runTool(tool);

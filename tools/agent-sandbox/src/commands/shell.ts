/**
 * `agent-sandbox shell WORKSPACE [-- CMD...]`: a shell, or the command, inside the running
 * session (session/shell-session.ts), with a terminal when stdin is one; exits with its status.
 * Refused with 93 (no-running-session) when no session of that workspace runs.
 */
import { ToolError, type CommandSpec } from '@agent-sandbox/shared';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import { ShellOptions, ShellOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { pathDefaults } from '../paths.js';
import { remoteHost } from '../dispatch/ask-node.js';
import { shellOverSsh } from '../dispatch/ssh.js';
import { shellSession } from '../session/shell-session.js';

export function shellCommand(): CommandSpec {
  return {
    name: 'shell',
    describe:
      "a shell (or CMD) inside a running session, as the agent's user, inside its ceilings, with no credential, capability or variable the session lacks; exits with its status; recorded in the session's ledger line. The kernel lets a process that joins a cgroup take pids.current one past pids.max: this one",
    takesCommand: true,
    options: flagsOf(ShellOptionsSchema),
    examples: [
      ['agent-sandbox shell fix-1', 'a login shell in the session of workspace fix-1'],
      ['agent-sandbox shell fix-1 -- git log -3', "one command; its exit status is the shell's"],
      ['agent-sandbox shell fix-1 --host node-1 -- git status', 'the same in a session dispatched to node-1 (no terminal there)'],
    ],
    run: async (_input, ctx) => {
      const paths = pathDefaults(ctx.env);
      const options = readOptions(ShellOptions, ShellOptionsSchema, ctx.options, { root: paths.root, registryFile: paths.registryFile });
      const [workspace, ...command] = ctx.rest;
      if (workspace === undefined) throw new ToolError('usage', 'bad-flag', 'shell: expected WORKSPACE (shell WORKSPACE [-- CMD...])');
      const remote = await remoteHost(options, ctx.options);
      if (remote) {
        // The dispatch key has no terminal: the command's input is this process's stdin, as it is.
        return {
          exitCode: await shellOverSsh(remote, {
            version: 1,
            kind: 'shell',
            nodeMachineId: remote.machineId,
            workspaceId: workspace,
            command,
          }),
        };
      }
      return {
        exitCode: await shellSession({ root: options.root, workspace, command, tty: ctx.stdinIsTTY && ctx.stdoutIsTTY, env: ctx.env }),
      };
    },
  };
}

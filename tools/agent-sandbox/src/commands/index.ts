/**
 * agent-sandbox: the launcher's commands, every one set up here, in the order `--help` lists
 * them; each lives in a file (or folder) of its own beside this one. The only place that
 * touches process stdio and exit status (through the shared skeleton; in exec mode, the bare log
 * path on stdout; in log --json, the ledger's lines). Importing it has no side effects; the
 * executable's entry is ../cli.ts.
 */
import { isTerminal, processIo, runTool, writeStdout, type ToolSpec } from '@agent-sandbox/shared';
import { defaultImage } from '../session/request.js';
import { doctorCommand } from './doctor/index.js';
import type { Entry } from './entry.js';
import { hostsCommand } from './hosts.js';
import { kubeCommand } from './kube/index.js';
import { logCommand } from './log.js';
import { nodeSetupCommand } from './node-setup/index.js';
import { planCommand } from './plan.js';
import { pruneCommand } from './prune.js';
import { psCommand } from './ps.js';
import { shellCommand } from './shell.js';
import { stopCommand } from './stop.js';
import { receiveCommand } from './receive/index.js';
import { stdinChannel } from './receive/stdin-channel.js';
import { sessionCommand } from './session.js';
import { workspaceCommand } from './workspace.js';

export type { Entry };

export function makeTool(entry: Entry): ToolSpec {
  return {
    name: 'agent-sandbox',
    summary: 'run an agent CLI session in one podman container with declared limits; fail closed',
    commands: [
      sessionCommand('run', entry, 'run a session; the agent owns stdin/stdout/stderr; exits with its status'),
      sessionCommand('exec', entry, 'run a session with output captured to a log; stdout carries only the log path'),
      planCommand(entry),
      kubeCommand(entry),
      logCommand(entry),
      psCommand(entry),
      shellCommand(),
      stopCommand(),
      hostsCommand(),
      doctorCommand(),
      workspaceCommand(),
      pruneCommand(),
      nodeSetupCommand(entry.argv[1] ?? 'agent-sandbox'),
      receiveCommand(entry),
    ],
    epilog: `Defaults: root $HOME/sandbox, image ${defaultImage}, ledger \${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl. The agent never runs outside a container; no flag or variable changes that.`,
  };
}

/** The entry the bin shim calls. */
export async function run(): Promise<void> {
  const io = processIo();
  await runTool(
    makeTool({
      argv: [process.execPath, ...process.argv.slice(1)],
      writeStdout: (text) => void writeStdout(text),
      channel: stdinChannel,
      stdout: () => process.stdout,
      stderrIsTTY: isTerminal(2),
    }),
    io,
  );
}

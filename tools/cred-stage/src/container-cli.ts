/**
 * The container-side CLI, bundled into the image as /usr/local/lib/agent-sandbox/cred-stage.js
 * and started from a V8 startup snapshot of it (/usr/local/bin/cred-stage, image/README.md).
 * It runs on Debian's node 18. It was written when the shared skeleton needed yargs
 * (which refuses node 18), so it parses its few flags by hand and keeps the same
 * contract (one JSON document on stdout, human text on stderr, exit codes from
 * the table). It never reads stdin: the entrypoint's stdin belongs to the agent.
 */
import { ToolError, toErrorDocument } from '@agent-sandbox/shared/tool-error';
import { describeTable } from './credential-table.js';
import { installCredentials, type InstallOptions } from './install.js';

const usage = `cred-stage (container side): install staged credentials

  cred-stage install [--secrets-dir DIR] [--home DIR] [--require RUNTIME,...]
      copy /sandbox-secrets/<runtime>/<file> to $HOME/<path from the table>, mode 0600
  cred-stage runtimes
      print the credential table as JSON

Exit 0 on success, 85 when a staged credential is missing or unsafe, 80 on bad usage.
Host-side commands (plan, stage) are in the repository's tools/cred-stage/bin/cred-stage.
`;

const installFlags: Record<string, 'secretsDir' | 'home' | 'require'> = {
  '--secrets-dir': 'secretsDir',
  '--home': 'home',
  '--require': 'require',
};

export interface ContainerResult {
  output: string;
  exitCode: number;
  log: string[];
}

function parseInstallFlags(args: string[]): InstallOptions {
  const options: InstallOptions = {};
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const field = installFlags[flag];
    if (!field) throw new ToolError('usage', 'bad-flag', `unknown argument "${arg}" (see --help)`);
    const value = inline ?? args[(i += 1)];
    if (value === undefined || value === '') throw new ToolError('usage', 'bad-flag', `${flag}: expected a value`);
    if (field === 'require') options.require = value.split(',').filter(Boolean);
    else options[field] = value;
  }
  return options;
}

export async function containerMain(argv: string[], env: NodeJS.ProcessEnv): Promise<ContainerResult> {
  const log: string[] = [];
  try {
    const [command, ...args] = argv;
    if (command === undefined || command === '--help' || command === '-h' || args.includes('--help')) {
      return { output: usage, exitCode: command === undefined ? 80 : 0, log };
    }
    if (command === 'runtimes' && args.length === 0) {
      return { output: `${JSON.stringify({ ok: true, runtimes: describeTable() })}\n`, exitCode: 0, log };
    }
    if (command !== 'install') {
      throw new ToolError('usage', 'unknown-command', `unknown command "${command}" here; the container side has install and runtimes`);
    }
    const result = await installCredentials({ env, ...parseInstallFlags(args) });
    for (const step of result.installed) log.push(`cred-stage: installed ${step.runtime} credential at ${step.to} (mode ${step.mode})`);
    return { output: `${JSON.stringify(result)}\n`, exitCode: 0, log };
  } catch (err) {
    const { document, exitCode } = toErrorDocument(err);
    log.push(`cred-stage: ${document.error.message}`);
    return { output: `${JSON.stringify(document)}\n`, exitCode, log };
  }
}

/** The only place in the bundle that touches stdio and the exit status. */
export async function runContainer(): Promise<void> {
  const { output, exitCode, log } = await containerMain(process.argv.slice(2), process.env);
  for (const line of log) process.stderr.write(`${line}\n`);
  process.stdout.write(output);
  process.exitCode = exitCode;
}

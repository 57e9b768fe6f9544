/**
 * agent-sandbox: the launcher's commands. The only place that touches process stdio and exit
 * status (through the shared skeleton, and in exec mode the bare log path on stdout).
 * Importing it has no side effects; the executable's entry is ./cli.ts.
 */
import os from 'node:os';
import path from 'node:path';
import { isTerminal, processIo, runTool, writeStdout, toErrorDocument, type CommandSpec, type RunContext, type ToolSpec } from '@agent-sandbox/shared';
import { doctorCommand, hostsCommand, kubeCommand, planCommand } from './commands.js';
import type { Cores } from './cores.js';
import { defaultRegistryPath } from './hosts.js';
import { launch, recordVerdict, type Mode } from './launch.js';
import { defaultLedgerPath } from './ledger.js';
import { homeOf, launchRequest, sessionFlags } from './options.js';
import { makeProgress } from './progress.js';
import { realCores } from './real-cores.js';
import { receive } from './receiver.js';
import { defaultRoot } from './session-layout.js';
import { defaultImage } from './session.js';

const user = () => os.userInfo().username;
const options = sessionFlags.map((f) => ({ flag: f.flag, type: f.type, describe: f.describe }));

export interface Entry {
  cores: Cores;
  argv: string[];
  writeStdout: (text: string) => void;
  readStdin: () => Promise<string>;
  stderrIsTTY: boolean;
}

/**
 * A refusal before the request is complete (a bad flag value): the cause on stderr and a
 * ledger line, never JSON on stdout (stdout belongs to the agent in run and exec).
 */
function refuseUsage(err: unknown, ctx: RunContext): number {
  const { document, exitCode } = toErrorDocument(err);
  ctx.log(`agent-sandbox: ${document.error.message}`);
  const ledger = typeof ctx.options['ledger'] === 'string' && path.isAbsolute(ctx.options['ledger']) ? ctx.options['ledger'] : defaultLedgerPath(ctx.env, homeOf(ctx.env));
  const result = typeof ctx.options['resultFile'] === 'string' && path.isAbsolute(ctx.options['resultFile']) ? ctx.options['resultFile'] : undefined;
  const now = new Date().toISOString();
  recordVerdict(
    { ledgerFile: ledger, ...(result ? { resultFile: result } : {}) },
    {
      version: 1,
      sessionId: typeof ctx.options['workspace'] === 'string' ? path.basename(ctx.options['workspace']) : 'unknown',
      runtime: typeof ctx.options['runtime'] === 'string' ? ctx.options['runtime'] : 'unknown',
      account: null,
      host: 'unknown',
      containment: null,
      image: typeof ctx.options['image'] === 'string' ? ctx.options['image'] : defaultImage,
      limits: null,
      startedAt: now,
      endedAt: now,
      exitCode,
      outcome: 'refused',
      reason: document.error.code,
      message: document.error.message,
      peak: null,
    },
    ctx.log,
  );
  return exitCode;
}

function sessionCommand(mode: Mode, entry: Entry, describe: string): CommandSpec {
  return {
    name: mode,
    describe,
    options,
    takesCommand: true,
    examples: [[`agent-sandbox ${mode} --runtime codex --workspace s1 -- ${mode === 'exec' ? 'exec "fix the tests"' : ''}`, 'a session in workspace s1']],
    run: async (_input, ctx: RunContext) => {
      let request;
      try {
        request = launchRequest(mode, ctx.options, ctx.rest, ctx.env, entry.argv);
      } catch (err) {
        return { exitCode: refuseUsage(err, ctx) };
      }
      const exitCode = await launch(request, entry.cores, {
        env: ctx.env,
        user: user(),
        stdinIsTTY: ctx.stdinIsTTY,
        stdoutIsTTY: ctx.stdoutIsTTY,
        log: ctx.log,
        progress: makeProgress(entry.stderrIsTTY, ctx.log),
        printStdout: entry.writeStdout,
      });
      return { exitCode };
    },
  };
}

export function makeTool(entry: Entry): ToolSpec {
  return {
    name: 'agent-sandbox',
    summary: 'run an agent CLI session in one podman container with declared limits; fail closed',
    commands: [
      sessionCommand('run', entry, 'run a session; the agent owns stdin/stdout/stderr; exits with its status'),
      sessionCommand('exec', entry, 'run a session with output captured to a log; stdout carries only the log path'),
      {
        name: 'plan',
        describe: 'print the composed session plan (JSON); stages and runs nothing',
        options,
        takesCommand: true,
        run: async (_i, ctx) => ({ output: await planCommand(launchRequest('run', ctx.options, ctx.rest, ctx.env, entry.argv), entry.cores, ctx.env, user()) }),
      },
      {
        name: 'kube',
        describe: 'print the session plan as a Kubernetes Pod manifest (JSON, which is YAML)',
        options,
        takesCommand: true,
        run: async (_i, ctx) => ({ output: await kubeCommand(launchRequest('run', ctx.options, ctx.rest, ctx.env, entry.argv), entry.cores, ctx.env, user()) }),
      },
      {
        name: 'hosts',
        describe: 'list the hosts registry: roles, which is this machine, which answer',
        options: [options.find((o) => o.flag === 'hosts')!],
        run: async (_i, ctx) => {
          const flag = ctx.options['hosts'] as string | undefined;
          const file = flag ?? defaultRegistryPath(ctx.env, homeOf(ctx.env));
          return { output: await hostsCommand(file, Boolean(flag), '/etc/machine-id') };
        },
      },
      {
        name: 'doctor',
        describe: 'readiness report for this node from the run path preflight; exit 0 only when a session would start',
        options: [
          ...options.filter((o) => ['host', 'hosts', 'image', 'account', 'root', 'runtime'].includes(o.flag)),
          { flag: 'json', type: 'boolean', describe: 'print the report as JSON' },
        ],
        run: async (_i, ctx) => {
          const o = { ...ctx.options };
          const request = launchRequest('run', { ...o, runtime: o['runtime'] ?? 'codex', workspace: 'doctor' }, [], ctx.env, entry.argv);
          const report = await doctorCommand({ ...request, runtime: (o['runtime'] as typeof request.runtime | undefined) ?? request.runtime }, entry.cores, ctx.env, user(), o['runtime'] !== undefined);
          const { exitCode, ...doc } = report;
          if (ctx.options['json']) return { output: doc, exitCode };
          for (const c of doc.checks) ctx.log(`${c.ok ? 'ok  ' : c.required ? 'FAIL' : 'warn'} ${c.name}: ${c.ok ? c.detail : c.remedy}`);
          ctx.log(doc.ok ? 'a session would start here' : 'a session would NOT start here');
          return { exitCode };
        },
      },
      {
        name: 'receive',
        describe: 'node side of ssh dispatch (the forced command): a session request as JSON on stdin',
        options: [
          { flag: 'root', type: 'string', describe: 'permitted root on this node (default $HOME/sandbox)' },
          { flag: 'ledger', type: 'string', describe: 'ledger file on this node' },
          { flag: 'machine-id-file', type: 'string', describe: "this node's identity (default /etc/machine-id)" },
        ],
        run: async (_i, ctx) => {
          const home = homeOf(ctx.env);
          const ledgerFile = (ctx.options['ledger'] as string | undefined) ?? defaultLedgerPath(ctx.env, home);
          const exitCode = await receive(
            await entry.readStdin(),
            {
              root: (ctx.options['root'] as string | undefined) ?? defaultRoot(home),
              ledgerFile,
              logDir: path.join(path.dirname(ledgerFile), 'logs'),
              machineIdFile: (ctx.options['machineIdFile'] as string | undefined) ?? '/etc/machine-id',
            },
            entry.cores,
            {
              env: ctx.env,
              user: user(),
              stdinIsTTY: false,
              stdoutIsTTY: false,
              log: ctx.log,
              progress: () => undefined,
              printStdout: entry.writeStdout,
            },
          );
          return { exitCode };
        },
      },
    ],
    epilog: `Defaults: root $HOME/sandbox, image ${defaultImage}, ledger \${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl. The agent never runs outside a container; no flag or variable changes that.`,
  };
}

/** The entry the bin shim calls. */
export async function run(): Promise<void> {
  const io = processIo();
  const entry: Entry = {
    cores: realCores(),
    argv: [process.execPath, ...process.argv.slice(1)],
    writeStdout: (text) => void writeStdout(text),
    readStdin: io.readStdin,
    stderrIsTTY: isTerminal(2),
  };
  await runTool(makeTool(entry), io);
}

/**
 * agent-sandbox: the launcher's commands. The only place that touches process stdio and exit
 * status (through the shared skeleton, and in exec mode the bare log path on stdout).
 * Importing it has no side effects; the executable's entry is ./cli.ts.
 */
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { isTerminal, processIo, runTool, writeStdout, type CommandSpec, type RunContext, type ToolSpec } from '@agent-sandbox/shared';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { doctorCommand, hostsCommand, kubeCommand, planCommand } from './commands.js';
import type { SessionIdentity } from './compose.js';
import { defaultRegistryPath } from './hosts.js';
import { launch } from './launch.js';
import type { LaunchIo } from './launch-io.js';
import { defaultLedgerPath } from './ledger.js';
import { makeProgress } from './progress.js';
import { defaultBundleMax, receive, type Channel } from './receiver.js';
import { stdinChannel } from './stdin-channel.js';
import { parseSize } from '@agent-sandbox/shared/limits';
import { defaultImage, defaultRoot, homeOf, parseRequest, sessionFlags, type Mode } from './request.js';
import { sweepAbandoned } from './sweep.js';
import { workspaceCommand } from './workspace-command.js';
import { nodeSetupCommand } from './node-setup-command.js';
import { pruneCommand } from './prune-command.js';
import { recordVerdict, refusedLine } from './verdict.js';
import { defaultLimits } from '@agent-sandbox/shared/limits';

const user = () => os.userInfo().username;
const options = sessionFlags.map((f) => ({ flag: f.flag, type: f.type, describe: f.describe }));

export interface Entry {
  argv: string[];
  writeStdout: (text: string) => void;
  /** The receiver's channel: the request's first line on stdin, the bytes after it, and the connection's end. */
  channel: () => Channel;
  /** The process's stdout as a stream (the receiver's return bundle). */
  stdout: () => NodeJS.WritableStream;
  stderrIsTTY: boolean;
}

/**
 * A refusal before the request is complete (a bad flag value): the cause on stderr and a
 * ledger line, never JSON on stdout (stdout belongs to the agent in run and exec).
 */
function refuseUsage(err: unknown, ctx: RunContext): number {
  const opt = (key: string) => (typeof ctx.options[key] === 'string' ? (ctx.options[key] as string) : undefined);
  const absolute = (key: string) => (opt(key) && path.isAbsolute(opt(key)!) ? opt(key) : undefined);
  const identity: SessionIdentity = {
    runId: randomBytes(8).toString('hex'),
    sessionId: opt('workspace') ? path.basename(opt('workspace')!) : 'unknown',
    runtime: 'codex',
    account: null,
    host: 'unknown',
    containment: null,
    image: opt('image') ?? defaultImage,
    limits: defaultLimits,
    startedAt: new Date().toISOString(),
  };
  const { line, exitCode, message } = refusedLine(identity, err);
  ctx.log(`agent-sandbox: ${forTerminal(message)}`);
  const ledgerFile = absolute('ledger') ?? defaultLedgerPath(ctx.env, homeOf(ctx.env));
  recordVerdict({ ledgerFile, ...(absolute('resultFile') ? { resultFile: absolute('resultFile')! } : {}) }, { ...line, runtime: opt('runtime') ?? 'unknown', limits: null }, ctx.log);
  return exitCode;
}

function launchIo(entry: Entry, ctx: RunContext, verbose: boolean): LaunchIo {
  return {
    env: ctx.env,
    user: user(),
    stdinIsTTY: ctx.stdinIsTTY,
    stdoutIsTTY: ctx.stdoutIsTTY,
    log: ctx.log,
    progress: makeProgress(verbose, ctx.log),
    printStdout: entry.writeStdout,
  };
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
        request = parseRequest(mode, ctx.options, ctx.rest, ctx.env, entry.argv);
      } catch (err) {
        return { exitCode: refuseUsage(err, ctx) };
      }
      return { exitCode: await launch(request, launchIo(entry, ctx, request.verbose)) };
    },
  };
}

/** plan, kube and doctor also sweep what dead sessions left (any launcher start does). */
async function sweepFirst(ctx: RunContext, root: unknown): Promise<void> {
  const given = typeof root === 'string' && path.isAbsolute(root) ? root : defaultRoot(homeOf(ctx.env));
  await sweepAbandoned(given, ctx.log).catch(() => []);
}

function receiveCommand(entry: Entry): CommandSpec {
  return {
    name: 'receive',
    describe: 'node side of ssh dispatch (the forced command): a session request as one JSON line on stdin',
    options: [
      { flag: 'root', type: 'string', describe: 'permitted root on this node (default $HOME/sandbox)' },
      { flag: 'ledger', type: 'string', describe: 'ledger file on this node' },
      { flag: 'machine-id-file', type: 'string', describe: "this node's identity (default /etc/machine-id)" },
      { flag: 'bundle-max', type: 'string', describe: `the largest git bundle a dispatched session may bring (default ${defaultBundleMax})` },
    ],
    run: async (_i, ctx) => {
      const ledgerFile = (ctx.options['ledger'] as string | undefined) ?? defaultLedgerPath(ctx.env, homeOf(ctx.env));
      const config = {
        root: (ctx.options['root'] as string | undefined) ?? defaultRoot(homeOf(ctx.env)),
        ledgerFile,
        logDir: path.join(path.dirname(ledgerFile), 'logs'),
        machineIdFile: (ctx.options['machineIdFile'] as string | undefined) ?? '/etc/machine-id',
        bundleMaxBytes: parseSize('--bundle-max', (ctx.options['bundleMax'] as string | undefined) ?? defaultBundleMax),
        stdout: entry.stdout,
      };
      const io = { ...launchIo(entry, ctx, false), stdinIsTTY: false, stdoutIsTTY: false, progress: () => undefined };
      return { exitCode: await receive(entry.channel(), config, io) };
    },
  };
}

type RequestOf = (ctx: RunContext) => ReturnType<typeof parseRequest>;

/** plan and kube: the composed session as JSON (kube stages the credential for the Pod). */
function printCommands(request: RequestOf): CommandSpec[] {
  return [
    {
      name: 'plan',
      describe: 'print the composed session plan (JSON); stages and runs nothing',
      options,
      takesCommand: true,
      run: async (_i, ctx) => {
        await sweepFirst(ctx, ctx.options['root']);
        return { output: await planCommand(request(ctx), { env: ctx.env, user: user() }) };
      },
    },
    {
      name: 'kube',
      describe: "print the session plan as Kubernetes objects: a List of the Pod, a deny-all NetworkPolicy and the node broker's ConfigMap (JSON, which is YAML)",
      options,
      takesCommand: true,
      run: async (_i, ctx) => {
        await sweepFirst(ctx, ctx.options['root']);
        return { output: await kubeCommand(request(ctx), { env: ctx.env, user: user() }) };
      },
    },
  ];
}

function hostsCommandSpec(): CommandSpec {
  return {
    name: 'hosts',
    describe: 'list the hosts registry: roles, which is this machine, which answer',
    options: [options.find((o) => o.flag === 'hosts')!],
    run: async (_i, ctx) => {
      await sweepFirst(ctx, undefined);
      const flag = ctx.options['hosts'] as string | undefined;
      return { output: await hostsCommand(flag ?? defaultRegistryPath(ctx.env, homeOf(ctx.env)), Boolean(flag), '/etc/machine-id') };
    },
  };
}

function doctorCommandSpec(entry: Entry): CommandSpec {
  return {
    name: 'doctor',
    describe: 'readiness report for this node from the run path preflight; exit 0 only when a session would start',
    options: [
      ...options.filter((o) => ['host', 'hosts', 'image', 'account', 'root', 'runtime', 'ledger'].includes(o.flag)),
      { flag: 'json', type: 'boolean', describe: 'print the report as JSON' },
    ],
    run: async (_i, ctx) => {
      await sweepFirst(ctx, ctx.options['root']);
      const o = ctx.options;
      const req = parseRequest('run', { ...o, runtime: o['runtime'] ?? 'codex', workspace: 'doctor' }, [], ctx.env, entry.argv);
      const { exitCode, ...doc } = await doctorCommand(req, { env: ctx.env, user: user() }, o['runtime'] !== undefined, o['root'] !== undefined);
      if (o['json']) return { output: doc, exitCode };
      for (const c of doc.checks) ctx.log(`${c.ok ? 'ok  ' : c.required ? 'FAIL' : 'warn'} ${c.name}: ${c.ok ? c.detail : c.remedy}`);
      ctx.log(doc.ok ? 'a session would start here' : 'a session would NOT start here');
      return { exitCode };
    },
  };
}

export function makeTool(entry: Entry): ToolSpec {
  const request: RequestOf = (ctx) => parseRequest('run', ctx.options, ctx.rest, ctx.env, entry.argv);
  return {
    name: 'agent-sandbox',
    summary: 'run an agent CLI session in one podman container with declared limits; fail closed',
    commands: [
      sessionCommand('run', entry, 'run a session; the agent owns stdin/stdout/stderr; exits with its status'),
      sessionCommand('exec', entry, 'run a session with output captured to a log; stdout carries only the log path'),
      ...printCommands(request),
      hostsCommandSpec(),
      doctorCommandSpec(entry),
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

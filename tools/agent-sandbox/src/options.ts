/**
 * Options normalised in one place: flags -> a LaunchRequest. Defaults come from the
 * launcher's HOME and XDG dirs; nothing read here can weaken containment (no flag or
 * variable selects host execution; --agent-bin only names the binary run in the container).
 */
import os from 'node:os';
import path from 'node:path';
import { ToolError, validateDocument } from '@agent-sandbox/shared';
import { RuntimeName, SessionLimits } from '@agent-sandbox/shared/validators/agent-sandbox';
import { defaultRegistryPath } from './hosts.js';
import type { LaunchRequest, Mode } from './launch.js';
import { defaultLedgerPath } from './ledger.js';
import { runtimeRow } from './runtimes.js';
import { defaultRoot } from './session-layout.js';
import { defaultImage, defaultLimits, type SessionOptions } from './session.js';

export function homeOf(env: NodeJS.ProcessEnv): string {
  const home = env['HOME'];
  return home && path.isAbsolute(home) ? home : os.userInfo().homedir;
}

/** The flags run, exec, plan and kube share. */
export const sessionFlags = [
  { flag: 'runtime', type: 'string', describe: 'codex, claude or cursor-agent' },
  { flag: 'workspace', type: 'string', describe: 'workspace id, or its path <root>/workspaces/<id>' },
  { flag: 'host', type: 'string', describe: 'run on this registry host (it must have the agent-seat role)' },
  { flag: 'account', type: 'string', describe: 'credential account name (cred-stage accounts)' },
  { flag: 'memory', type: 'string', describe: `memory limit (default ${defaultLimits.memory})` },
  { flag: 'memory-swap', type: 'string', describe: 'memory+swap limit (default: equal to --memory, no swap)' },
  { flag: 'pids', type: 'number', describe: `process limit (default ${defaultLimits.pids})` },
  { flag: 'cpus', type: 'number', describe: `CPU quota (default ${defaultLimits.cpus})` },
  { flag: 'cpu-shares', type: 'number', describe: `CPU weight (default ${defaultLimits.cpuShares})` },
  { flag: 'image', type: 'string', describe: `image (default ${defaultImage})` },
  { flag: 'agent-bin', type: 'string', describe: 'binary run INSIDE the container instead of the runtime CLI' },
  { flag: 'network', type: 'string', describe: 'the container\'s network: none (default) or ns:/run/netns/<name> (a namespace you made, e.g. a loopback-only model server)' },
  { flag: 'allow-expiring', type: 'boolean', describe: 'stage a credential that expires within the session anyway (recorded in the ledger)' },
  { flag: 'root', type: 'string', describe: 'permitted root (default $HOME/sandbox)' },
  { flag: 'git-root', type: 'string', describe: 'also permit git metadata under this directory, mounted at the same path (a worktree whose repository is outside the root); repeatable; local sessions only' },
  { flag: 'hosts', type: 'string', describe: 'hosts registry (default ${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json)' },
  { flag: 'ledger', type: 'string', describe: 'ledger file (default ${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl)' },
  { flag: 'result-file', type: 'string', describe: 'also write the verdict JSON here' },
] as const;

function str(options: Record<string, unknown>, key: string): string | undefined {
  const v = options[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') throw new ToolError('usage', 'bad-flag', `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: expected a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function absolute(flag: string, value: string): string {
  if (!path.isAbsolute(value)) throw new ToolError('usage', 'bad-flag', `--${flag}: expected an absolute path, got ${JSON.stringify(value)}`);
  return value;
}

/** The container's network: "none" or a named network namespace; never the host's or a bridge. */
export const networkPattern = /^(none|ns:\/run\/netns\/[A-Za-z0-9_.-]+)$/;

export function parseNetwork(options: Record<string, unknown>): string {
  const network = str(options, 'network') ?? 'none';
  if (!networkPattern.test(network)) {
    throw new ToolError('usage', 'bad-flag', `--network: expected "none" or "ns:/run/netns/<name>", got ${JSON.stringify(network)}`);
  }
  return network;
}

function flagBool(options: Record<string, unknown>, key: string, flag: string): boolean {
  const v = options[key];
  if (v === undefined || v === false) return false;
  if (v !== true) throw new ToolError('usage', 'bad-flag', `--${flag}: expected no value (a boolean flag), got ${JSON.stringify(v)}`);
  return true;
}

/** --git-root, given any number of times: absolute paths (mount-plan realpaths and checks them). */
export function parseGitRoots(options: Record<string, unknown>): string[] {
  const given = options['gitRoot'];
  if (given === undefined) return [];
  const values = Array.isArray(given) ? given : [given];
  return values.map((value) => {
    if (typeof value !== 'string' || value === '') throw new ToolError('usage', 'bad-flag', `--git-root: expected a non-empty string, got ${JSON.stringify(value)}`);
    return absolute('git-root', value);
  });
}

/** The declared limits: defaults, then flags; validated against the schema (80 names the flag). */
export function parseLimits(options: Record<string, unknown>): SessionLimits {
  const memory = str(options, 'memory') ?? defaultLimits.memory;
  const limits = {
    memory,
    memorySwap: str(options, 'memorySwap') ?? (options['memory'] === undefined ? defaultLimits.memorySwap : memory),
    pids: options['pids'] ?? defaultLimits.pids,
    cpus: options['cpus'] ?? defaultLimits.cpus,
    cpuShares: options['cpuShares'] ?? defaultLimits.cpuShares,
  };
  return validateDocument(SessionLimits, limits, 'limits');
}

/** Flags -> LaunchRequest (everything but the mode-specific I/O). */
export function launchRequest(mode: Mode, options: Record<string, unknown>, rest: string[], env: NodeJS.ProcessEnv, argv: string[]): LaunchRequest {
  const home = homeOf(env);
  const runtime = str(options, 'runtime');
  if (!runtime) throw new ToolError('usage', 'missing-flag', '--runtime: required (codex, claude or cursor-agent)');
  validateDocument(RuntimeName, runtime, '--runtime');
  runtimeRow(runtime);
  const workspace = str(options, 'workspace');
  if (!workspace) throw new ToolError('usage', 'missing-flag', '--workspace: required (a workspace id or <root>/workspaces/<id>)');
  const hostsFlag = str(options, 'hosts');
  const ledgerFlag = str(options, 'ledger');
  const ledgerFile = ledgerFlag ? absolute('ledger', ledgerFlag) : defaultLedgerPath(env, home);
  const resultFile = str(options, 'resultFile');
  const host = str(options, 'host');
  const account = str(options, 'account');
  const agentBin = str(options, 'agentBin');
  const network = parseNetwork(options);
  const allowExpiring = flagBool(options, 'allowExpiring', 'allow-expiring');
  const gitRoots = parseGitRoots(options);
  return {
    mode,
    runtime: runtime as LaunchRequest['runtime'],
    workspace,
    root: absolute('root', str(options, 'root') ?? defaultRoot(home)),
    ...(account ? { account } : {}),
    limits: parseLimits(options),
    image: str(options, 'image') ?? defaultImage,
    ...(agentBin ? { agentBin } : {}),
    agentArgs: rest,
    network,
    allowExpiring,
    ...(gitRoots.length > 0 ? { gitRoots } : {}),
    ...(host ? { host } : {}),
    registryFile: hostsFlag ? absolute('hosts', hostsFlag) : defaultRegistryPath(env, home),
    registryExplicit: Boolean(hostsFlag),
    ledgerFile,
    ...(resultFile ? { resultFile: absolute('result-file', resultFile) } : {}),
    logDir: path.join(path.dirname(ledgerFile), 'logs'),
    machineIdFile: '/etc/machine-id',
    selfArgv: argv,
  };
}

/**
 * The session a request describes. How it is attached (tty), whose environment names are
 * passed, and where it runs are the caller's: `run`/`exec`/`receive` and `plan`/`kube` differ
 * only there.
 */
/**
 * The fields that say what runs and under which limits, as a launch request, a session's
 * options and the ssh wire request all name them (the optional ones only when set).
 */
export function agentFields(from: { account?: string | undefined; limits: SessionLimits; image: string; agentBin?: string | undefined; agentArgs: string[] }) {
  return {
    ...(from.account ? { account: from.account } : {}),
    limits: from.limits,
    image: from.image,
    ...(from.agentBin ? { agentBin: from.agentBin } : {}),
    agentArgs: from.agentArgs,
  };
}

export function sessionOptionsOf(
  request: LaunchRequest,
  where: { env: NodeJS.ProcessEnv; tty: boolean; containment: SessionOptions['containment']; host: string },
): SessionOptions {
  return {
    runtime: request.runtime,
    workspace: request.workspace,
    root: request.root,
    ...agentFields(request),
    network: request.network,
    allowExpiring: request.allowExpiring,
    ...(request.gitRoots ? { gitRoots: request.gitRoots } : {}),
    tty: where.tty,
    interactive: request.mode === 'run',
    env: where.env,
    containment: where.containment,
    host: where.host,
  };
}

/**
 * The launch request: what the user asked for, normalised once from the flags. Defaults come
 * from the launcher's HOME and XDG dirs and from the shared limits; nothing read here can
 * weaken containment (no flag or variable selects host execution; --agent-bin only names the
 * binary run inside the container). Every refusal here is 80 and names the flag.
 */
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { defaultLimits, limitsFrom, type Limits } from '@agent-sandbox/shared/limits';
import { runtimeNames, isRuntimeName, type RuntimeName } from '@agent-sandbox/shared/runtimes';
import { parseEntry } from '@agent-sandbox/egress-proxy';
import { defaultRegistryPath } from './hosts.js';
import { defaultLedgerPath } from './ledger.js';

/** run: the agent owns the terminal; exec: output to a log, its path on stdout; receive: the ssh receiver. */
export type Mode = 'run' | 'exec' | 'receive';

/** The session image with the real agent CLIs (image/Containerfile.agents). */
export const defaultImage = 'localhost/agent-sandbox-agents:latest';

export interface LaunchRequest {
  mode: Mode;
  runtime: RuntimeName;
  /** A workspace id, or its path <root>/workspaces/<id>. */
  workspace: string;
  root: string;
  account?: string;
  limits: Limits;
  /** True when --disk was given: the launcher then refuses rather than lowers it. */
  diskGiven: boolean;
  image: string;
  agentBin?: string;
  agentArgs: string[];
  /** The container's network: "none" or "ns:/run/netns/<name>" (local sessions only). */
  network: string;
  /** Stage an expiring credential anyway (cred-stage's allowExpiring); recorded in the ledger. */
  allowExpiring: boolean;
  /** More roots permitted for git metadata besides the root (--git-root; local sessions only). */
  gitRoots: string[];
  /** runtime: the runtime's allowlist through the broker (default); none: offline. */
  egress: 'runtime' | 'none';
  /** Hosts added to the session's allowlist (--allow-host; local sessions only). */
  allowHosts: string[];
  /** Launcher progress lines, and the container entrypoint's own lines, on stderr (otherwise only the agent shows). */
  verbose: boolean;
  /** PEM certificates the agent trusts besides the image's roots (--ca-file; local sessions only). */
  caFile?: string;
  host?: string;
  registryFile: string;
  registryExplicit: boolean;
  ledgerFile: string;
  resultFile?: string;
  logDir: string;
  machineIdFile: string;
  /** The launcher's own argv, for the systemd-run handoff (re-exec of this same command). */
  selfArgv: string[];
}

export function homeOf(env: NodeJS.ProcessEnv): string {
  const home = env['HOME'];
  return home && path.isAbsolute(home) ? home : os.userInfo().homedir;
}

/** The default permitted root: $HOME/sandbox (flag --root overrides; no env var does). */
export function defaultRoot(home: string): string {
  return path.join(home, 'sandbox');
}

/** The flags run, exec, plan and kube share (yargs reads them; `--help` shows them). */
export const sessionFlags = [
  { flag: 'runtime', type: 'string', describe: runtimeNames.join(', ') },
  { flag: 'workspace', type: 'string', describe: 'workspace id, or its path <root>/workspaces/<id>' },
  { flag: 'host', type: 'string', describe: 'run on this registry host (it must have the agent-seat role)' },
  { flag: 'account', type: 'string', describe: 'credential account name (cred-stage accounts)' },
  { flag: 'memory', type: 'string', describe: `memory limit, e.g. 512m or 4g (default ${defaultLimits.memory})` },
  { flag: 'memory-swap', type: 'string', describe: 'memory+swap limit (default: equal to --memory, no swap)' },
  { flag: 'pids', type: 'string', describe: `process limit (default ${defaultLimits.pids})` },
  { flag: 'cpus', type: 'string', describe: `CPU quota (default ${defaultLimits.cpus})` },
  { flag: 'cpu-shares', type: 'string', describe: `CPU weight (default ${defaultLimits.cpuShares})` },
  { flag: 'disk', type: 'string', describe: `what the session may write to its workspace and home (default ${defaultLimits.disk}, at most half the free space)` },
  { flag: 'timeout', type: 'string', describe: `wall-clock ceiling, e.g. 45m or 2h (default ${defaultLimits.timeout}); the session is stopped with reason timeout` },
  { flag: 'image', type: 'string', describe: `image (default ${defaultImage})` },
  { flag: 'agent-bin', type: 'string', describe: 'binary run INSIDE the container instead of the runtime CLI' },
  { flag: 'network', type: 'string', describe: "the container's network: none (default) or ns:/run/netns/<name> (a namespace you made, e.g. a loopback-only model server)" },
  { flag: 'egress', type: 'string', describe: "runtime (default): the session reaches its runtime's API hosts through the broker, nothing else; none: no network at all" },
  { flag: 'allow-host', type: 'string', describe: 'also allow this host[:port] (or *.domain) through the broker; repeatable; local sessions only' },
  { flag: 'ca-file', type: 'string', describe: 'PEM certificates the agent also trusts (a TLS proxy that re-signs, a test CA): copied read-only into the session, NODE_EXTRA_CA_CERTS and CODEX_CA_CERTIFICATE set; local sessions only' },
  { flag: 'allow-expiring', type: 'boolean', describe: 'stage a credential that expires within the session anyway (recorded in the ledger)' },
  { flag: 'root', type: 'string', describe: 'permitted root (default $HOME/sandbox)' },
  { flag: 'git-root', type: 'string', describe: 'also permit git metadata under this directory, mounted at the same path; repeatable; local sessions only' },
  { flag: 'hosts', type: 'string', describe: 'hosts registry (default ${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json)' },
  { flag: 'ledger', type: 'string', describe: 'ledger file (default ${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl)' },
  { flag: 'result-file', type: 'string', describe: 'also write the verdict JSON here' },
  { flag: 'verbose', type: 'boolean', describe: "progress lines and the container entrypoint's own lines on stderr (otherwise they go to the ledger and only the agent shows)" },
] as const;

const flagOf = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

function str(options: Record<string, unknown>, key: string): string | undefined {
  const v = options[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') throw new ToolError('usage', 'bad-flag', `${flagOf(key)}: expected a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function absolute(key: string, value: string): string {
  if (!path.isAbsolute(value)) throw new ToolError('usage', 'bad-flag', `${flagOf(key)}: expected an absolute path, got ${JSON.stringify(value)}`);
  return value;
}

/** The container's network: "none" or a named network namespace; never the host's or a bridge. */
export const networkPattern = /^(none|ns:\/run\/netns\/[A-Za-z0-9_.-]+)$/;

function parseNetwork(options: Record<string, unknown>): string {
  const network = str(options, 'network') ?? 'none';
  if (!networkPattern.test(network)) throw new ToolError('usage', 'bad-flag', `--network: expected "none" or "ns:/run/netns/<name>", got ${JSON.stringify(network)}`);
  return network;
}

function flagBool(options: Record<string, unknown>, key: string): boolean {
  const v = options[key];
  if (v === undefined || v === false) return false;
  if (v !== true) throw new ToolError('usage', 'bad-flag', `${flagOf(key)}: expected no value (a boolean flag), got ${JSON.stringify(v)}`);
  return true;
}

/** Values of a repeatable flag. */
function repeated(options: Record<string, unknown>, key: string): string[] {
  const given = options[key];
  if (given === undefined) return [];
  return (Array.isArray(given) ? given : [given]).map((value) => {
    if (typeof value !== 'string' || value === '') throw new ToolError('usage', 'bad-flag', `${flagOf(key)}: expected a non-empty string, got ${JSON.stringify(value)}`);
    return value;
  });
}

/** --egress and --allow-host; both mean the broker, so neither goes with a namespace of the caller's. */
function parseEgress(options: Record<string, unknown>, network: string): Pick<LaunchRequest, 'egress' | 'allowHosts'> {
  const egress = str(options, 'egress') ?? 'runtime';
  if (egress !== 'runtime' && egress !== 'none') throw new ToolError('usage', 'bad-flag', `--egress: expected "runtime" or "none", got ${JSON.stringify(egress)}`);
  const allowHosts = repeated(options, 'allowHost');
  for (const entry of allowHosts) parseEntry(entry, '--allow-host');
  if (network !== 'none' && (allowHosts.length > 0 || options['egress'] !== undefined)) {
    throw new ToolError('usage', 'bad-flag', '--network ns:... joins a namespace you made: --egress and --allow-host (the broker) do not apply to it');
  }
  if (egress === 'none' && allowHosts.length > 0) throw new ToolError('usage', 'bad-flag', '--allow-host adds to the broker\'s allowlist: it does not go with --egress none');
  return { egress, allowHosts };
}

/** --git-root, given any number of times: absolute paths (mount-plan realpaths and checks them). */
function parseGitRoots(options: Record<string, unknown>): string[] {
  const given = options['gitRoot'];
  if (given === undefined) return [];
  return (Array.isArray(given) ? given : [given]).map((value) => {
    if (typeof value !== 'string' || value === '') throw new ToolError('usage', 'bad-flag', `--git-root: expected a non-empty string, got ${JSON.stringify(value)}`);
    return absolute('gitRoot', value);
  });
}

function parseRuntime(options: Record<string, unknown>): RuntimeName {
  const runtime = str(options, 'runtime');
  if (!runtime) throw new ToolError('usage', 'missing-flag', `--runtime: required (${runtimeNames.join(', ')})`);
  if (!isRuntimeName(runtime)) throw new ToolError('usage', 'unknown-runtime', `--runtime: expected one of ${runtimeNames.join(', ')}, got ${JSON.stringify(runtime)}`);
  return runtime;
}

/** Flags -> LaunchRequest. Limits are checked here, before anything is staged. */
export function parseRequest(mode: Mode, options: Record<string, unknown>, rest: string[], env: NodeJS.ProcessEnv, selfArgv: string[]): LaunchRequest {
  const home = homeOf(env);
  const runtime = parseRuntime(options);
  const workspace = str(options, 'workspace');
  if (!workspace) throw new ToolError('usage', 'missing-flag', '--workspace: required (a workspace id or <root>/workspaces/<id>)');
  const hostsFlag = str(options, 'hosts');
  const ledgerFlag = str(options, 'ledger');
  const ledgerFile = ledgerFlag ? absolute('ledger', ledgerFlag) : defaultLedgerPath(env, home);
  const resultFile = str(options, 'resultFile');
  const host = str(options, 'host');
  const account = str(options, 'account');
  const agentBin = str(options, 'agentBin');
  const limitFlags = ['memory', 'memorySwap', 'pids', 'cpus', 'cpuShares', 'disk', 'timeout'] as const;
  const network = parseNetwork(options);
  const caFile = str(options, 'caFile');
  return {
    mode,
    runtime,
    workspace,
    root: absolute('root', str(options, 'root') ?? defaultRoot(home)),
    ...(account ? { account } : {}),
    limits: limitsFrom(Object.fromEntries(limitFlags.map((k) => [k, options[k]]))),
    diskGiven: options['disk'] !== undefined,
    image: str(options, 'image') ?? defaultImage,
    ...(agentBin ? { agentBin } : {}),
    agentArgs: rest,
    network,
    ...parseEgress(options, network),
    ...(caFile ? { caFile: absolute('caFile', caFile) } : {}),
    allowExpiring: flagBool(options, 'allowExpiring'),
    gitRoots: parseGitRoots(options),
    verbose: flagBool(options, 'verbose'),
    ...(host ? { host } : {}),
    registryFile: hostsFlag ? absolute('hosts', hostsFlag) : defaultRegistryPath(env, home),
    registryExplicit: Boolean(hostsFlag),
    ledgerFile,
    ...(resultFile ? { resultFile: absolute('resultFile', resultFile) } : {}),
    logDir: path.join(path.dirname(ledgerFile), 'logs'),
    machineIdFile: '/etc/machine-id',
    selfArgv,
  };
}

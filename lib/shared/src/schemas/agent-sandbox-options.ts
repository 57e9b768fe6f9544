/**
 * The options of the launcher's commands other than the session's own (whose options are the
 * launch request's fields: agent-sandbox.ts). Each field names the flag that fills it, what
 * --help says and its default (lib/shared/src/options.ts); the commands normalise their flags
 * through one function against these, so a refusal names the flag and says what was expected.
 * Defaults that depend on the environment are computed by tools/agent-sandbox/src/paths.ts and
 * named here as --help prints them (`defaultText`).
 */
import { AbsolutePath, Closed, DurationText, SizeText, Type } from '../schema.js';
import { runtimeNames, type RuntimeName } from '../runtimes.js';
import { machineIdFile } from '../host-facts.js';

const Root = Type.String({ ...AbsolutePath, flag: 'root', description: 'permitted root', defaultText: '$HOME/sandbox' });
const LedgerFile = Type.String({ ...AbsolutePath, flag: 'ledger', description: 'the ledger file', defaultText: '${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl' });
const RegistryFile = Type.String({ ...AbsolutePath, flag: 'hosts', description: 'hosts registry', defaultText: '${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json' });
const MachineIdFile = Type.String({ ...AbsolutePath, default: machineIdFile, description: "this machine's identity file" });
const Json = (description = 'print the document (JSON) on stdout') => Type.Boolean({ flag: 'json', default: false, description });
const Text = (flag: string, description: string, extra: Record<string, unknown> = {}) => Type.String({ minLength: 1, flag, description, ...extra });

/** `agent-sandbox log`. */
export const LogOptions = Closed({
  ledgerFile: Type.String({ ...LedgerFile, description: 'the ledger to read (its .1 too when needed)' }),
  count: Text('n', 'how many sessions, the most recent', { pattern: '^[1-9][0-9]{0,5}$', default: '20', expect: 'a whole number of sessions from 1 to 999999' }),
  json: Json("print the ledger's own lines (JSON lines) on stdout instead of the table"),
});

/** `agent-sandbox prune`: the retention's numbers, each replaced by its flag when given. */
export const PruneOptions = Closed({
  olderThan: Type.Optional(Text('older-than', 'remove files older than this (30d, 12h, 90m)', { pattern: '^[0-9]+([dhms]|h[0-9]+m|m[0-9]+s)?$', defaultText: '30d', expect: 'an age such as 30d, 12h, 90m or a number of seconds' })),
  keep: Type.Optional(Text('keep', 'keep at most this many files per kind, newest first', { pattern: '^[0-9]{1,9}$', defaultText: '200', expect: 'a whole number of files' })),
  maxBytes: Type.Optional(Type.String({ ...SizeText, flag: 'max-bytes', description: 'keep at most this much per kind, newest first', defaultText: '1g' })),
  dryRun: Type.Boolean({ flag: 'dry-run', default: false, description: 'say what would be removed; remove nothing' }),
  ledgerFile: Type.String({ ...LedgerFile, description: 'the ledger whose directory holds the logs' }),
});

/** `agent-sandbox workspace new|list|rm|import`: each action takes some of these (commands/workspace.ts says which). */
export const WorkspaceOptions = Closed({
  repo: Type.Optional(Text('repo', 'new: the git repository the workspace is a linked worktree of')),
  branch: Type.Optional(Text('branch', 'new: the branch to check out (default agent/<id>; made from --from when it does not exist)')),
  from: Type.Optional(Text('from', "new: where a new branch starts (default the repository's HEAD)")),
  force: Type.Boolean({ flag: 'force', default: false, description: 'rm: discard uncommitted work' }),
  root: Root,
  ledgerFile: Type.String({ ...LedgerFile, description: 'list: the ledger to read last sessions from' }),
  json: Json(),
});

/** `agent-sandbox hosts`. */
export const HostsOptions = Closed({
  registryFile: RegistryFile,
  machineIdFile: MachineIdFile,
});

/** `agent-sandbox doctor`: the session's flags a readiness report reads, none of them required. */
export const DoctorOptions = Closed({
  runtime: Type.Optional(Type.Unsafe<RuntimeName>(Type.Union(runtimeNames.map((name) => Type.Literal(name)), { flag: 'runtime', description: `also check this runtime's credential (${runtimeNames.join(', ')})`, expect: runtimeNames.join(', ') }))),
  account: Type.Optional(Text('account', 'credential account name (cred-stage accounts)')),
  host: Type.Optional(Text('host', 'the registry host to report on (only this machine reports on itself)')),
  registryFile: RegistryFile,
  image: Text('image', 'the session image', { pattern: '^[A-Za-z0-9./:@_-]+$', default: 'localhost/agent-sandbox-agents:latest', expect: 'an image name of [A-Za-z0-9./:@_-]' }),
  root: Root,
  ledgerFile: LedgerFile,
  machineIdFile: MachineIdFile,
  json: Json('print the report as JSON'),
});

/** `agent-sandbox receive`, the node's forced command. */
export const ReceiveOptions = Closed({
  root: Type.String({ ...Root, description: 'permitted root on this node' }),
  ledgerFile: Type.String({ ...LedgerFile, description: 'ledger file on this node' }),
  machineIdFile: Type.String({ ...MachineIdFile, flag: 'machine-id-file', description: "this node's identity" }),
  bundleMax: Type.String({ ...SizeText, flag: 'bundle-max', default: '1g', description: 'the largest git bundle a dispatched session may bring' }),
});

/** `agent-sandbox node-setup` (as root); provision.ts checks the user name, the key and the paths it writes into the forced command. */
export const NodeSetupOptions = Closed({
  user: Text('user', 'the user sessions run as on this node (made when missing)'),
  key: Text('key', "the dispatching launcher's public key: a .pub file, or its text"),
  root: Type.Optional(Type.String({ ...AbsolutePath, flag: 'root', description: "the user's permitted root", defaultText: '<home>/sandbox' })),
  authorizedKeys: Type.Optional(Text('authorized-keys', 'the authorized_keys file to write', { defaultText: '<home>/.ssh/authorized_keys' })),
  bin: Type.Optional(Text('bin', 'the agent-sandbox the forced command runs', { defaultText: '/usr/local/bin/agent-sandbox when setup linked it, else this one' })),
  machineIdFile: Type.Optional(Text('machine-id-file', "passed to the receiver: this node's identity file", { defaultText: machineIdFile })),
  json: Json(),
});

/** `ps`, `stop` and `shell` on a node of the registry: asked over the same ssh identity as a dispatched run. */
const OnHost = {
  host: Type.Optional(Text('host', "the registry's host whose sessions these are (a dispatch node: asked through its forced command; --root is then the node's own)")),
  registryFile: RegistryFile,
  machineIdFile: MachineIdFile,
};

/** `agent-sandbox ps`: the running sessions of a root. */
export const PsOptions = Closed({
  root: Root,
  json: Json('print one JSON object per running session (JSON lines, schema agent-sandbox.ps-line) on stdout instead of the table'),
  ...OnHost,
});

/** `agent-sandbox stop WORKSPACE`: its launcher ends the session. */
export const StopOptions = Closed({
  grace: Type.String({ ...DurationText, flag: 'grace', default: '10s', description: "seconds between the agent's SIGTERM and the kill (0: the kill at once)", expect: 'seconds, or a duration such as 30s or 2m' }),
  root: Root,
  json: Json('print the stop document (JSON) on stdout'),
  ...OnHost,
});

/** `agent-sandbox shell WORKSPACE [-- CMD...]`: a process inside the running session. */
export const ShellOptions = Closed({
  root: Root,
  ...OnHost,
});

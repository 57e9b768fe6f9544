/**
 * Contracts of the launcher (tools/agent-sandbox): the hosts registry, the launch request
 * (what run, exec, plan and kube were asked, normalised once), the session request that crosses
 * ssh to the forced-command receiver (the launch request's fields a node takes, by the same
 * schemas), the verdict (--result-file), the ledger line, and the doctor report. One schema
 * each; types derive from them.
 */
import { AbsolutePath, Closed, ContainerNetwork, DurationText, Mount, SizeText, Type, type Static } from '../schema.js';
import { runtimeNames, type RuntimeName as RuntimeNameOf } from '../runtimes.js';
import { GitReturn, HostRunReport, NestedGitChange } from './mount-plan.js';
import { EgressSummary } from './egress-proxy.js';
import { WorkOffer, WorkTransfer } from './workspace.js';

export const RuntimeName = Type.Unsafe<RuntimeNameOf>(Type.Union(runtimeNames.map((name) => Type.Literal(name)), { description: 'which agent CLI the session runs' }));
export type RuntimeName = Static<typeof RuntimeName>;

export const ContainmentMode = Type.Union(
  [Type.Literal('podman-rootless'), Type.Literal('podman-rootful'), Type.Literal('kube')],
  { description: 'how the session was contained' },
);
export type ContainmentMode = Static<typeof ContainmentMode>;

export const SessionLimits = Closed(
  {
    memory: SizeText,
    memorySwap: SizeText,
    pids: Type.Integer({ minimum: 1, maximum: 4194304 }),
    cpus: Type.Number({ exclusiveMinimum: 0, maximum: 1024 }),
    cpuShares: Type.Integer({ minimum: 2, maximum: 262144 }),
    disk: SizeText,
    timeout: DurationText,
  },
  { description: 'declared limits of one session (lib/shared/src/limits.ts: parsers, checks, defaults and their rule)' },
);
export type SessionLimits = Static<typeof SessionLimits>;

export const HostSsh = Closed({
  address: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9._:-]+$', description: 'host name or IP (no user@, no options)' }),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  user: Type.String({ minLength: 1, pattern: '^[a-z_][a-z0-9_-]*$' }),
  hostKey: Type.String({ minLength: 1, pattern: '^(ssh-|ecdsa-)[a-z0-9-]+ [A-Za-z0-9+/=]+$', description: 'the pinned host public key ("ssh-ed25519 AAAA...")' }),
  identityFile: AbsolutePath,
});
export type HostSsh = Static<typeof HostSsh>;

export const HostEntry = Closed({
  name: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9._-]+$' }),
  roles: Type.Array(Type.String({ minLength: 1 })),
  machineId: Type.String({ pattern: '^[0-9a-f]{32}$', description: "the node's /etc/machine-id" }),
  ssh: Type.Optional(HostSsh),
});
export type HostEntry = Static<typeof HostEntry>;

export const HostsRegistry = Closed(
  {
    version: Type.Literal(1),
    hosts: Type.Array(HostEntry),
  },
  { $id: 'agent-sandbox.hosts' },
);
export type HostsRegistry = Static<typeof HostsRegistry>;

/** The fields a launch request and the session request that carries it to a node share: one schema each. */
const Account = Type.String({ minLength: 1, maxLength: 200, description: 'credential identity (a name, never a token)' });
const ImageName = Type.String({ minLength: 1, pattern: '^[A-Za-z0-9./:@_-]+$' });
const AgentBin = Type.String({ minLength: 1, description: 'the binary run inside the container (default: the runtime CLI)' });
const AgentArgs = Type.Array(Type.String());
const Verbose = Type.Boolean({ description: "the container entrypoint's lines go to stderr instead of the ledger" });

/**
 * What run, exec, plan, kube and the node's receiver ask of a session, normalised once
 * (tools/agent-sandbox/src/session/request.ts: from the flags, or from a session request and
 * the node's own settings) and checked against this schema before anything else happens.
 */
export const LaunchRequest = Closed(
  {
    mode: Type.Union([Type.Literal('run'), Type.Literal('exec'), Type.Literal('receive')], {
      description: "run: the agent owns the terminal; exec: its output to a log, the log's path on stdout; receive: a node's receiver",
    }),
    runtime: RuntimeName,
    workspace: Type.String({ minLength: 1, description: 'a workspace id, or its path <root>/workspaces/<id>' }),
    root: AbsolutePath,
    account: Type.Optional(Account),
    limits: SessionLimits,
    diskGiven: Type.Boolean({ description: '--disk was given: the launcher then refuses rather than lowers it' }),
    image: ImageName,
    agentBin: Type.Optional(AgentBin),
    agentArgs: AgentArgs,
    network: ContainerNetwork,
    allowExpiring: Type.Boolean({ description: "stage an expiring credential anyway (cred-stage's allowExpiring); recorded in the ledger" }),
    gitRoots: Type.Array(AbsolutePath, { description: 'more roots permitted for git metadata besides the root (--git-root; local sessions only)' }),
    egress: Type.Union([Type.Literal('runtime'), Type.Literal('none')], { description: "runtime: the runtime's allowlist through the broker; none: offline" }),
    allowHosts: Type.Array(Type.String({ minLength: 1 }), { description: "hosts added to the session's allowlist (--allow-host; local sessions only)" }),
    verbose: Verbose,
    caFile: Type.Optional(AbsolutePath),
    host: Type.Optional(Type.String({ minLength: 1, description: 'the registry host to run on' })),
    registryFile: AbsolutePath,
    registryExplicit: Type.Boolean({ description: '--hosts was given: a missing file is then refused' }),
    ledgerFile: AbsolutePath,
    resultFile: Type.Optional(AbsolutePath),
    logDir: AbsolutePath,
    machineIdFile: AbsolutePath,
    selfArgv: Type.Array(Type.String(), { description: "the launcher's own argv, for the systemd-run handoff (re-exec of this same command)" }),
  },
  { $id: 'agent-sandbox.launch-request' },
);
export type LaunchRequest = Static<typeof LaunchRequest>;

/** What crosses ssh: identities and paths, never a credential's contents. */
export const SessionRequest = Closed(
  {
    version: Type.Literal(1),
    kind: Type.Optional(Type.Literal('session', { description: 'a session (the default); see agent-sandbox.return-request for the other kind' })),
    nodeMachineId: Type.String({ pattern: '^[0-9a-f]{32}$', description: 'the node this request is meant for' }),
    runtime: RuntimeName,
    workspaceId: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', description: 'the workspace under <root>/workspaces on the node' }),
    account: Type.Optional(Account),
    credentialHome: Type.Optional(AbsolutePath),
    limits: SessionLimits,
    image: ImageName,
    agentBin: Type.Optional(AgentBin),
    agentArgs: AgentArgs,
    requestedBy: Type.Optional(Type.String({ maxLength: 200 })),
    work: Type.Optional(WorkOffer),
    verbose: Type.Optional(Verbose),
  },
  { $id: 'agent-sandbox.session-request' },
);
export type SessionRequest = Static<typeof SessionRequest>;

export const Peak = Closed({
  memoryBytes: Type.Union([Type.Integer(), Type.Null()]),
  pids: Type.Union([Type.Integer(), Type.Null()]),
  cpuSeconds: Type.Union([Type.Number(), Type.Null()]),
});

/**
 * Symbolic links the session left where the launcher acts on the host after it (its home's
 * credential paths, the entrypoint log): each was removed as a link, never followed.
 */
export const PlantedLinks = Closed(
  {
    named: Type.Array(
      Closed({
        path: Type.String({ description: 'where the link was, as the session saw it (/sandbox/home/...)' }),
        target: Type.String({ description: 'what it pointed at, as the session wrote it (never resolved)' }),
      }),
    ),
    others: Type.Integer({ minimum: 0, description: 'how many more were removed than are named' }),
  },
  { description: 'symbolic links the session planted on the launcher\'s clean-up paths: removed as links, nothing they pointed at touched' },
);
export type PlantedLinks = Static<typeof PlantedLinks>;

/** One line of the ledger, and the verdict written to --result-file. */
export const LedgerLine = Closed(
  {
    version: Type.Literal(1),
    runId: Type.Optional(Type.String({ pattern: '^[0-9a-f]{16}$', description: 'this launch, unique: a sweep never writes a second line for it' })),
    sessionId: Type.String(),
    runtime: Type.String(),
    account: Type.Union([Type.String(), Type.Null()], { description: 'credential identity, never a secret' }),
    host: Type.String(),
    containment: Type.Union([ContainmentMode, Type.Null()]),
    image: Type.String(),
    limits: Type.Union([SessionLimits, Type.Null()]),
    startedAt: Type.String({ description: 'ISO 8601' }),
    endedAt: Type.String({ description: 'ISO 8601' }),
    exitCode: Type.Integer({ minimum: 0, maximum: 255 }),
    outcome: Type.Union([Type.Literal('ran'), Type.Literal('refused')]),
    reason: Type.String({
      description:
        'when the agent ran: podman-attrib\'s reason (exited, signal, oom-killed, pids-limit) or the launcher\'s own stop (timeout, disk-limit, abandoned); when refused: the error code',
    }),
    message: Type.Optional(Type.String()),
    evidence: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    peak: Type.Union([Peak, Type.Null()]),
    logPath: Type.Optional(Type.String()),
    nestedGit: Type.Optional(Type.Array(NestedGitChange, { description: 'nested repositories the session made or changed in its workspace (do not run git there unread)' })),
    gitReturn: Type.Optional(GitReturn),
    hostRun: Type.Optional(HostRunReport),
    egress: Type.Optional(
      Closed(
        {
          mode: Type.Union([Type.Literal('broker'), Type.Literal('none'), Type.Literal('namespace')]),
          allow: Type.Array(Type.String(), { description: "the session's allowlist (broker mode)" }),
          log: Type.Optional(Type.String({ description: 'the broker\'s log: one JSON line per attempt' })),
          summary: Type.Optional(EgressSummary),
          ca: Type.Optional(
            Closed(
              {
                file: Type.String({ description: 'the --ca-file given, after realpath' }),
                certificates: Type.Array(Closed({ subject: Type.String(), sha256: Type.String(), notAfter: Type.String() })),
              },
              { description: 'certificates the agent trusted besides the image roots (--ca-file)' },
            ),
          ),
        },
        { description: 'what the session could reach, and what it reached and was refused' },
      ),
    ),
    remote: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    work: Type.Optional(WorkTransfer),
    planted: Type.Optional(PlantedLinks),
    entrypoint: Type.Optional(
      Closed(
        {
          lines: Type.Array(Type.String(), { description: "the container entrypoint's and cred-stage install's own lines, in order" }),
          truncated: Type.Boolean({ description: 'the file was longer than the launcher reads (16 KiB)' }),
        },
        { description: 'written inside the container before the agent started, read after it ended: the agent could have changed it' },
      ),
    ),
    truncated: Type.Optional(
      Closed(
        {
          fields: Type.Array(Type.String(), {
            maxItems: 21,
            description: 'the fields cut (array items as []), at most 20 named, then "and N more"; ["*"]: only who the session was and how it ended were kept',
          }),
          bytes: Type.Integer({ minimum: 0, description: 'how large the line was before it was cut' }),
        },
        { description: 'the line was over 64 KiB and was cut to fit (arrays keep their first items, long strings their beginning)' },
      ),
    ),
  },
  { $id: 'agent-sandbox.ledger-line' },
);
export type LedgerLine = Static<typeof LedgerLine>;

export { Mount };

/**
 * Contracts of the launcher (tools/agent-sandbox): the launch request
 * (what run, exec, plan and kube were asked, normalised once), the session request that crosses
 * ssh to the forced-command receiver (the launch request's fields a node takes, by the same
 * schemas), the verdict (--result-file) and the ledger line. One schema each; types derive
 * from them. The hosts registry is in agent-sandbox-hosts.ts, the commands' options in
 * agent-sandbox-options.ts, the reports in agent-sandbox-reports.ts.
 * Long because the launch request and the ledger line are read together: each flag's field, and
 * what a session left.
 */
import { AbsolutePath, Closed, ContainerNetwork, DurationText, Mount, SizeText, Type, type Static } from '../schema.js';
import { runtimeNames, type RuntimeName as RuntimeNameOf } from '../runtimes.js';
import { defaultLimits } from '../limits.js';
import { machineIdFile } from '../host-facts.js';
import { GitReturn, HostRunReport, NestedGitChange } from './mount-plan.js';
import { EgressSummary } from './egress-proxy.js';
import { PublishedPort, QuarantinedReport, ShellsReport } from './agent-sandbox-reports.js';
import { WorkOffer, WorkTransfer } from './workspace.js';
import { CacheGrant, CachesByFlag } from './agent-sandbox-config.js';

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

/** The fields a launch request and the session request that carries it to a node share: one schema each. */
const Account = Type.String({ minLength: 1, maxLength: 200, flag: 'account', description: 'credential account name (cred-stage accounts); an identity, never a token' });
const ImageName = Type.String({ minLength: 1, pattern: '^[A-Za-z0-9./:@_-]+$', flag: 'image', description: 'the session image', default: 'localhost/agent-sandbox-agents:latest', expect: 'an image name of [A-Za-z0-9./:@_-]' });
const AgentBin = Type.String({ minLength: 1, flag: 'agent-bin', description: 'binary run INSIDE the container instead of the runtime CLI' });
const AgentArgs = Type.Array(Type.String(), { default: [], description: "the agent's arguments: everything after --" });
const Verbose = Type.Boolean({
  flag: 'verbose',
  default: false,
  description: "the launcher's progress and the container entrypoint's own lines on stderr, in words (otherwise they go to the ledger and only the agent shows)",
});

/** The declared limits as the flags give them: each field filled by its flag, as typed (lib/shared/src/limits.ts parses them). */
const LimitsByFlag = Closed({
  memory: Type.String({ ...SizeText, flag: 'memory', description: 'memory limit, e.g. 512m or 4g', default: defaultLimits.memory }),
  memorySwap: Type.String({ ...SizeText, flag: 'memory-swap', description: 'memory+swap limit (default: equal to --memory, no swap)' }),
  pids: Type.Integer({ minimum: 1, maximum: 4194304, flag: 'pids', description: 'process limit', default: defaultLimits.pids }),
  cpus: Type.Number({ exclusiveMinimum: 0, maximum: 1024, flag: 'cpus', description: 'CPU quota', default: defaultLimits.cpus }),
  cpuShares: Type.Integer({ minimum: 2, maximum: 262144, flag: 'cpu-shares', description: 'CPU weight', default: defaultLimits.cpuShares }),
  disk: Type.String({ ...SizeText, flag: 'disk', description: 'what the session may write to its workspace and home (at most half the free space)', default: defaultLimits.disk }),
  timeout: Type.String({ ...DurationText, flag: 'timeout', description: 'wall-clock ceiling, e.g. 45m or 2h; the session is stopped with reason timeout', default: defaultLimits.timeout }),
});

/**
 * What run, exec, plan, kube and the node's receiver ask of a session, normalised once
 * (tools/agent-sandbox/src/session/request.ts: from the flags, or from a session request and
 * the node's own settings) and checked against this schema before anything else happens. Each
 * field a flag fills names it (`flag`), with what --help says and its default (lib/shared/src/options.ts).
 */
export const LaunchRequest = Closed(
  {
    mode: Type.Union([Type.Literal('run'), Type.Literal('exec'), Type.Literal('receive')], {
      description: "run: the agent owns the terminal; exec: its output to a log, the log's path on stdout; receive: a node's receiver",
    }),
    runtime: Type.Unsafe<RuntimeNameOf>(Type.Union(runtimeNames.map((name) => Type.Literal(name)), { flag: 'runtime', description: runtimeNames.join(', '), expect: runtimeNames.join(', ') })),
    workspace: Type.String({ minLength: 1, flag: 'workspace', description: 'workspace id, or its path <root>/workspaces/<id>', expect: 'a workspace id or <root>/workspaces/<id>' }),
    host: Type.Optional(Type.String({ minLength: 1, flag: 'host', description: 'run on this registry host (it must have the agent-seat role)' })),
    account: Type.Optional(Account),
    limits: LimitsByFlag,
    diskGiven: Type.Boolean({ description: '--disk was given: the launcher then refuses rather than lowers it' }),
    image: ImageName,
    agentBin: Type.Optional(AgentBin),
    agentArgs: AgentArgs,
    network: Type.String({
      ...ContainerNetwork,
      flag: 'network',
      default: 'none',
      description: "the container's network: none or ns:/run/netns/<name> (a namespace you made, e.g. a loopback-only model server)",
      expect: '"none" or "ns:/run/netns/<name>"',
    }),
    egress: Type.Union([Type.Literal('runtime'), Type.Literal('none')], {
      flag: 'egress',
      default: 'runtime',
      description: "runtime: the session reaches its runtime's API hosts through the broker, nothing else; none: no network at all",
    }),
    allowHosts: Type.Array(Type.String({ minLength: 1 }), { flag: 'allow-host', default: [], description: 'also allow this host[:port] (or *.domain) through the broker; repeatable; local sessions only' }),
    caFile: Type.Optional(
      Type.String({
        ...AbsolutePath,
        flag: 'ca-file',
        description: 'PEM certificates the agent also trusts (a TLS proxy that re-signs, a test CA): copied read-only into the session, NODE_EXTRA_CA_CERTS and CODEX_CA_CERTIFICATE set; local sessions only',
      }),
    ),
    publish: Type.Array(Type.String({ pattern: '^([0-9]{1,5}:)?[0-9]{1,5}$' }), { flag: 'publish', default: [], expect: '[HOSTPORT:]PORT',
      description: "carry the host's 127.0.0.1:HOSTPORT to the container's 127.0.0.1:PORT, [HOSTPORT:]PORT (the container keeps no network; the image needs node); repeatable; local sessions only" }),
    caches: Type.Optional(CachesByFlag),
    allowExpiring: Type.Boolean({ flag: 'allow-expiring', default: false, description: 'stage a credential that expires within the session anyway (recorded in the ledger)' }),
    root: Type.String({ ...AbsolutePath, flag: 'root', description: 'permitted root', defaultText: '$HOME/sandbox' }),
    gitRoots: Type.Array(AbsolutePath, { flag: 'git-root', default: [], description: 'also permit git metadata under this directory, mounted at the same path; repeatable; local sessions only' }),
    registryFile: Type.String({ ...AbsolutePath, flag: 'hosts', description: 'hosts registry', defaultText: '${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json' }),
    registryExplicit: Type.Boolean({ description: '--hosts was given: a missing file is then refused' }),
    ledgerFile: Type.String({ ...AbsolutePath, flag: 'ledger', description: 'ledger file', defaultText: '${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl' }),
    resultFile: Type.Optional(Type.String({ ...AbsolutePath, flag: 'result-file', description: 'also write the verdict JSON here' })),
    verbose: Verbose,
    logDir: AbsolutePath,
    machineIdFile: Type.String({ ...AbsolutePath, default: machineIdFile, description: "this machine's identity, which the hosts registry names" }),
    selfArgv: Type.Array(Type.String(), { description: "the launcher's own argv, for the systemd-run handoff (re-exec of this same command)" }),
  },
  { $id: 'agent-sandbox.launch-request' },
);
export type LaunchRequest = Static<typeof LaunchRequest>;

/**
 * The launch request's fields that cross ssh as they are: the session request takes them from
 * the launch request's schema, so the two cannot differ (session/request.ts reads the list back
 * from the session request's fields).
 */
const Crossing = Type.Pick(LaunchRequest, ['runtime', 'account', 'limits', 'image', 'agentBin', 'agentArgs', 'verbose']);

/** What crosses ssh: identities and paths, never a credential's contents. */
export const SessionRequest = Closed(
  {
    version: Type.Literal(1),
    kind: Type.Optional(Type.Literal('session', { description: 'a session (the default); see agent-sandbox.return-request for the other kind' })),
    nodeMachineId: Type.String({ pattern: '^[0-9a-f]{32}$', description: 'the node this request is meant for' }),
    workspaceId: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', description: 'the workspace under <root>/workspaces on the node' }),
    credentialHome: Type.Optional(AbsolutePath),
    requestedBy: Type.Optional(Type.String({ maxLength: 200 })),
    work: Type.Optional(WorkOffer),
    ...Crossing.properties,
    verbose: Type.Optional(Crossing.properties.verbose),
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
        'when the agent ran: podman-attrib\'s reason (exited, signal, oom-killed, pids-limit) or the launcher\'s own stop (timeout, disk-limit, abandoned, stopped: by `agent-sandbox stop`); when refused: the error code',
    }),
    message: Type.Optional(Type.String()),
    evidence: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    peak: Type.Union([Peak, Type.Null()]),
    logPath: Type.Optional(Type.String()),
    nestedGit: Type.Optional(Type.Array(NestedGitChange, { description: 'nested repositories the session made or changed in its workspace (do not run git there unread)' })),
    gitReturn: Type.Optional(GitReturn),
    hostRun: Type.Optional(HostRunReport),
    quarantined: Type.Optional(QuarantinedReport),
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
    caches: Type.Optional(Type.Array(CacheGrant, { description: 'host package caches the session was given (--cache): read-only below a private layer that died with it' })),
    shells: Type.Optional(ShellsReport),
    published: Type.Optional(Type.Array(PublishedPort, { description: "ports carried from the host's 127.0.0.1 into the container's (run --publish)" })),
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

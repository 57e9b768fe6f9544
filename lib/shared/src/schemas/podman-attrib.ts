import { Closed, Type, type Static } from '../schema.js';

/** Why a session container ended. */
export const EndReason = Type.Union(
  [
    Type.Literal('exited'),
    Type.Literal('signal'),
    Type.Literal('oom-killed'),
    Type.Literal('pids-limit'),
    Type.Literal('start-failed'),
  ],
  { description: 'exited | signal | oom-killed | pids-limit | start-failed' },
);
export type EndReason = Static<typeof EndReason>;

const MaybeNumber = Type.Union([Type.Number(), Type.Null()]);

/** Peak usage of the session's cgroup; null where no source survived (said in evidence.cgroup). */
export const Peak = Closed(
  {
    memoryBytes: MaybeNumber,
    pids: MaybeNumber,
    cpuSeconds: MaybeNumber,
  },
  { description: 'peak memory (bytes), peak process count, total CPU seconds' },
);
export type Peak = Static<typeof Peak>;

/** State of one evidence source: read, or why not (never a guess). */
const SourceState = Type.Union([Type.Literal('read'), Type.Literal('unreadable'), Type.Literal('absent')]);

export const KernelLogEvidence = Closed({
  state: SourceState,
  source: Type.String({ description: '/dev/kmsg' }),
  error: Type.Optional(Type.String({ description: 'why the log could not be read (e.g. EPERM: dmesg_restrict)' })),
  match: Type.String({ description: 'the cgroup path a line must name to count' }),
  oomKills: Type.Array(Type.String(), { description: 'oom-kill lines naming our cgroup' }),
  pidsRejections: Type.Array(Type.String(), { description: '"fork rejected by pids controller" lines naming our cgroup' }),
});

export const CgroupEvidence = Closed({
  state: SourceState,
  version: Type.Union([Type.Literal('v1'), Type.Literal('v2')]),
  parent: Type.String({ description: 'the caller-owned parent cgroup, relative to the hierarchy root' }),
  error: Type.Optional(Type.String()),
  counters: Type.Record(Type.String(), Type.Number(), {
    description:
      'raw counters of the parent as "<file>" or "<file>:<key>", plus "conmon/<file>" for podman\'s conmon child, "descendants/pids.events:max" (the container\'s own cgroup, read while it ran: the kernel counts a rejected fork only there) and "descendants/conmon-scope" (1: conmon ran in a scope of its own inside the parent)',
  }),
  sampled: Type.Optional(Peak),
  pidsPeakBasis: Type.Optional(Type.String({ description: 'what peak.pids counts: the parent\'s pids.peak, and what was taken out of it (conmon, which podman moves in: a move is never refused by a limit)' })),
});

export const PodmanEvent = Closed({
  status: Type.String(),
  time: Type.String(),
  containerExitCode: Type.Optional(Type.Number()),
});

export const EventLogEvidence = Closed({
  state: SourceState,
  source: Type.String(),
  error: Type.Optional(Type.String()),
  events: Type.Array(PodmanEvent),
});

export const Evidence = Closed(
  {
    basis: Type.String({ description: 'the fact the reason rests on, naming its source and counter' }),
    exit: Closed({
      status: Type.Number(),
      source: Type.Union([Type.Literal('podman-run'), Type.Literal('inspect')]),
      signal: Type.Optional(Type.String({ description: 'SIGKILL for 137 etc.; inferred from 128+n' })),
    }),
    kernelLog: KernelLogEvidence,
    cgroup: CgroupEvidence,
    eventLog: EventLogEvidence,
    inspect: Type.Optional(
      Closed({
        status: Type.String(),
        oomKilled: Type.Boolean(),
        error: Type.String(),
        startedAt: Type.String(),
        finishedAt: Type.String(),
      }),
    ),
    stderrTail: Type.Optional(Type.String({ description: "the last lines of podman's stderr (start failures)" })),
    interrupted: Type.Optional(Type.Union([Type.Literal('SIGINT'), Type.Literal('SIGTERM')])),
  },
  { description: 'what the reason was based on; unreadable sources say so' },
);
export type Evidence = Static<typeof Evidence>;

export const PodmanAttribInput = Closed(
  {
    container: Type.String({ minLength: 1, description: 'name or ID of an exited container that still exists' }),
  },
  { $id: 'podman-attrib.input' },
);
export type PodmanAttribInput = Static<typeof PodmanAttribInput>;

export const PodmanAttribOutput = Closed(
  {
    ok: Type.Literal(true),
    exitCode: Type.Number({ description: "the contained command's status, unchanged" }),
    reason: EndReason,
    evidence: Evidence,
    peak: Peak,
    sessionId: Type.Optional(Type.String()),
    container: Type.Optional(Type.String({ description: 'container name' })),
    containerId: Type.Optional(Type.String()),
    startedAt: Type.Optional(Type.String()),
    endedAt: Type.Optional(Type.String()),
  },
  { $id: 'podman-attrib.output' },
);
export type PodmanAttribOutput = Static<typeof PodmanAttribOutput>;

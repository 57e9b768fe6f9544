/**
 * The launcher's reports (tools/agent-sandbox): `prune`'s output and `doctor`'s readiness
 * report, what a session's end moved out of its workspace, and what a running session's
 * commands report (`ps`'s lines, `stop`'s document, the shells and published ports of a line). Its session contracts (the request, the ledger line) are in agent-sandbox.ts.
 */
import { Closed, Type, type Static } from '../schema.js';

export const PruneOutput = Closed(
  {
    ok: Type.Literal(true),
    removed: Type.Array(Type.String(), { description: 'the files removed (on a dry run: that would be removed)' }),
    kept: Type.Integer({ minimum: 0, description: 'the per-session files kept' }),
    bytes: Type.Integer({ minimum: 0, description: 'what the removed files took on disk' }),
    dryRun: Type.Boolean(),
    policy: Closed({ keep: Type.Integer({ minimum: 0 }), olderThan: Type.String(), maxBytes: Type.Integer({ minimum: 0 }) }),
  },
  { $id: 'agent-sandbox.prune', description: "`agent-sandbox prune`: the per-session logs (broker attempt logs, exec logs) past the retention" },
);
export type PruneOutput = Static<typeof PruneOutput>;

export const DoctorCheck = Closed({
  name: Type.String(),
  ok: Type.Boolean(),
  required: Type.Boolean({ description: 'false for checks a session can start without (reported, not blocking)' }),
  detail: Type.String(),
  remedy: Type.Optional(Type.String()),
  exitCode: Type.Optional(Type.Integer()),
});
export type DoctorCheck = Static<typeof DoctorCheck>;

export const DoctorReport = Closed(
  {
    ok: Type.Boolean(),
    host: Type.String(),
    checks: Type.Array(DoctorCheck),
  },
  { $id: 'agent-sandbox.doctor' },
);
export type DoctorReport = Static<typeof DoctorReport>;

/** What was moved out of a workspace after its session (the ledger line's `quarantined`). */
export const QuarantinedReport = Closed(
  {
    dir: Type.String({ description: 'where they are now: <root>/quarantine/<id>/<time>' }),
    restore: Type.String({ description: 'a script that puts each back (mv -n)' }),
    named: Type.Array(
      Closed({
        path: Type.String({ description: 'relative to the workspace' }),
        kind: Type.Union([Type.Literal('gitdir'), Type.Literal('gitfile'), Type.Literal('symlink'), Type.Literal('bare'), Type.Literal('special')], { description: 'a nested repository, or a FIFO, socket or device node (special)' }),
      }),
      { maxItems: 50 },
    ),
    others: Type.Integer({ minimum: 0, description: 'how many more moved' }),
  },
  { description: "what the session made or changed that the user's git or shell would run or block on, moved out of the workspace after it ended" },
);
export type QuarantinedReport = Static<typeof QuarantinedReport>;

const Count = Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]);

/** One port the launcher carries from the host's loopback into the session (`run --publish`). */
export const PublishedPort = Closed({
  hostPort: Type.Integer({ minimum: 1, maximum: 65535, description: "the port on the host's 127.0.0.1" }),
  port: Type.Integer({ minimum: 1, maximum: 65535, description: "the port on the container's 127.0.0.1" }),
});
export type PublishedPort = Static<typeof PublishedPort>;

/**
 * `agent-sandbox ps --json`: one running session, read from what it already keeps (its record,
 * its parent cgroup's current counters, its broker's attempt log); listing costs it nothing.
 */
export const PsLine = Closed(
  {
    workspace: Type.String({ description: 'the workspace id (the session id)' }),
    runId: Type.String(),
    runtime: Type.String(),
    host: Type.String(),
    mode: Type.String({ description: 'run, exec or receive (a dispatched session on this node)' }),
    user: Type.String({ description: 'who started it' }),
    launcherPid: Type.Integer({ minimum: 1 }),
    container: Type.String(),
    startedAt: Type.String({ description: 'ISO 8601, when its launcher started' }),
    uptimeSeconds: Type.Integer({ minimum: 0 }),
    memory: Closed({ bytes: Count, limitBytes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]) }, { description: "the session parent cgroup's usage now (page cache included), against --memory" }),
    pids: Closed({ current: Count, limit: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]) }, { description: "the container's tasks now (conmon's taken out), against --pids" }),
    cpu: Closed(
      {
        seconds: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'CPU time used so far' }),
        average: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'CPUs used on average since it started (seconds / uptime)' }),
        limit: Type.Union([Type.Number(), Type.Null()], { description: '--cpus' }),
      },
      { description: "the parent cgroup's CPU time, against --cpus" },
    ),
    disk: Closed(
      {
        bytes: Count,
        files: Count,
        limitBytes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
        limitFiles: Count,
        asOf: Type.Union([Type.String(), Type.Null()], { description: "when the launcher's disk watch last counted (a look of the names at least every 15 s on a small tree; docs/performance.md section 13 says what wakes it): null before its first count" }),
      },
      { description: 'what the session wrote to its workspace and home (and git store) over the start, as its launcher last counted it, against --disk' },
    ),
    egress: Closed(
      {
        mode: Type.String({ description: "broker, none or namespace (unknown: a launcher that did not record it)" }),
        reached: Count,
        refused: Count,
      },
      { description: "broker mode: attempts allowed and refused so far, from the broker's attempt log (refusals are written in 10 s batches); null in the other modes" },
    ),
    published: Type.Array(PublishedPort, { description: 'ports carried from the host (run --publish)' }),
  },
  { $id: 'agent-sandbox.ps-line' },
);
export type PsLine = Static<typeof PsLine>;

/** `agent-sandbox stop --json`: which session was stopped, and how its launcher ended it. */
export const StopOutput = Closed(
  {
    ok: Type.Literal(true),
    workspace: Type.String(),
    runId: Type.String(),
    grace: Type.Integer({ minimum: 0, description: "seconds between the agent's SIGTERM and the kill" }),
    by: Type.String({ description: 'who asked' }),
    verdict: Type.Union(
      [Closed({ exitCode: Type.Integer(), reason: Type.String(), endedAt: Type.String() }), Type.Null()],
      { description: "the session's ledger line, as its launcher wrote it (reason stopped); null when the ledger could not be read" },
    ),
  },
  { $id: 'agent-sandbox.stop' },
);
export type StopOutput = Static<typeof StopOutput>;

/** The shells run in a session (the ledger line's `shells`). */
export const ShellsReport = Closed(
  {
    named: Type.Array(
      Closed({
        at: Type.String({ description: 'when it started (ISO 8601)' }),
        by: Type.String({ description: 'the host user who ran `agent-sandbox shell`' }),
        uid: Type.Integer({ description: "that user's uid" }),
        command: Type.Array(Type.String(), { maxItems: 20, description: 'what it ran (each argument cut to 200 characters); [] for the login shell' }),
        tty: Type.Boolean({ description: 'with a terminal' }),
      }),
      { maxItems: 20 },
    ),
    others: Type.Integer({ minimum: 0, description: 'how many more shells ran than are named' }),
  },
  { description: 'the processes `agent-sandbox shell` ran inside the session while it ran, as the agent, inside its ceilings' },
);
export type ShellsReport = Static<typeof ShellsReport>;

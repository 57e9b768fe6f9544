/**
 * The launcher's reports (tools/agent-sandbox): `prune`'s output and `doctor`'s readiness
 * report, and what a session's end moved out of its workspace. Its session contracts (the request, the ledger line) are in agent-sandbox.ts.
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

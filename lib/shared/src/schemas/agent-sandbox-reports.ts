/**
 * The launcher's reports (tools/agent-sandbox): `prune`'s output and `doctor`'s readiness
 * report. Its session contracts (the request, the ledger line) are in agent-sandbox.ts.
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

/**
 * How a session that ran ended, in the ledger's terms: the reason (podman-attrib's, or the
 * launcher's own stop), the evidence, the peaks, and what the session changed that a mount
 * cannot prevent (nested repositories), and what came home from its git store.
 */
import type { EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';
import type { SessionPlan } from './compose.js';
import type { GitAudit } from '../git/audit.js';
import type { SessionRun } from './run.js';
import type { SessionEnd } from '../ledger/verdict.js';
import { caRecord } from '../egress/ca-file.js';
import { plantedField, type PlantedLink } from '../workspace/home.js';

export interface EndContext {
  noNewPrivs: boolean;
  egress?: EgressSummary;
  entrypoint?: SessionEnd['entrypoint'];
  work?: SessionEnd['work'];
  logPath?: string;
  remote?: Record<string, unknown>;
  /** Links the session planted on the launcher's clean-up paths (removed as links). */
  planted?: PlantedLink[];
}

export function sessionEnd(run: SessionRun, audit: GitAudit, plan: SessionPlan, context: EndContext): SessionEnd {
  return {
    exitCode: run.exitCode,
    endedAt: run.endedAt,
    reason: run.reason,
    evidence: {
      basis: run.attribution.evidence.basis,
      // What peak.pids counted: the parent's peak less conmon, which podman moves in (a move is never refused by pids.max).
      ...(run.attribution.evidence.cgroup?.pidsPeakBasis ? { pidsPeakBasis: run.attribution.evidence.cgroup.pidsPeakBasis } : {}),
      noNewPrivs: context.noNewPrivs,
      reexec: false,
      network: plan.runPlan.network,
      disk: run.disk,
      ...(run.attribution.containerId ? { containerId: run.attribution.containerId } : {}),
      ...(plan.credentials.expiryOverride ? { expiryOverride: true } : {}),
      ...(run.stopped ? { stopped: run.stopped } : {}),
    },
    peak: run.attribution.peak,
    ...(context.logPath ? { logPath: context.logPath } : {}),
    ...(audit.nestedGit.length > 0 ? { nestedGit: audit.nestedGit } : {}),
    ...(audit.quarantined ? { quarantined: audit.quarantined } : {}),
    ...(audit.gitReturn ? { gitReturn: audit.gitReturn } : {}),
    ...(audit.hostRun ? { hostRun: audit.hostRun } : {}),
    egress: {
      mode: plan.egress.mode,
      allow: plan.egress.allow,
      ...(plan.egress.logPath ? { log: plan.egress.logPath } : {}),
      ...(context.egress ? { summary: context.egress } : {}),
      ...(plan.egress.ca ? { ca: caRecord(plan.egress.ca) } : {}),
    },
    ...(context.entrypoint ? { entrypoint: context.entrypoint } : {}),
    ...(context.remote ? { remote: context.remote } : {}),
    ...(context.work ? { work: context.work } : {}),
    ...(context.planted?.length ? { planted: plantedField(context.planted) } : {}),
    ...(plan.publish.ports.length > 0 ? { published: plan.publish.ports } : {}),
    ...(plan.caches?.length ? { caches: plan.caches } : {}),
  };
}

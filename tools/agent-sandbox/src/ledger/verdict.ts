/**
 * The session's one ledger line, built in one place from who the session is and how it ended
 * (or why it was refused), and written to the ledger and, when asked, the verdict file.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { toErrorDocument } from '@agent-sandbox/shared';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { Limits } from '@agent-sandbox/shared/limits';
import type { RuntimeName } from '@agent-sandbox/shared/runtimes';
import type { ContainmentMode } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { appendLedger, boundedLedgerLine, ledgerExit } from './append.js';

/** Who and what a session is: the fields its plan output and its ledger line both state. */
export interface SessionIdentity {
  runId: string;
  sessionId: string;
  runtime: RuntimeName;
  account: string | null;
  host: string;
  containment: ContainmentMode | null;
  image: string;
  limits: Limits;
  startedAt: string;
}

export interface VerdictTargets {
  ledgerFile: string;
  resultFile?: string;
}

/** How a session that ran ended, in the ledger's terms. */
export interface SessionEnd {
  exitCode: number;
  endedAt: string;
  reason: string;
  message?: string;
  evidence: Record<string, unknown>;
  peak: LedgerLine['peak'];
  logPath?: string;
  nestedGit?: LedgerLine['nestedGit'];
  quarantined?: LedgerLine['quarantined'];
  gitReturn?: LedgerLine['gitReturn'];
  hostRun?: LedgerLine['hostRun'];
  egress?: LedgerLine['egress'];
  remote?: LedgerLine['remote'];
  work?: LedgerLine['work'];
  entrypoint?: LedgerLine['entrypoint'];
  planted?: LedgerLine['planted'];
  shells?: LedgerLine['shells'];
  published?: LedgerLine['published'];
  caches?: LedgerLine['caches'];
}

/** The identity fields every line states, as the ledger schema has them. */
function identityFields(identity: SessionIdentity) {
  const { runId, sessionId, runtime, account, host, containment, image, limits, startedAt } = identity;
  return { version: 1 as const, runId, sessionId, runtime, account, host, containment, image, limits, startedAt };
}

/** The line of a session that ran (its status is the agent's own, unchanged). */
export function ranLine(identity: SessionIdentity, end: SessionEnd): LedgerLine {
  return {
    ...identityFields(identity),
    endedAt: end.endedAt,
    exitCode: ledgerExit(end.exitCode),
    outcome: 'ran',
    reason: end.reason,
    ...(end.message ? { message: end.message } : {}),
    evidence: end.evidence,
    peak: end.peak,
    ...(end.logPath ? { logPath: end.logPath } : {}),
    ...(end.nestedGit ? { nestedGit: end.nestedGit } : {}),
    ...(end.quarantined ? { quarantined: end.quarantined } : {}),
    ...(end.gitReturn ? { gitReturn: end.gitReturn } : {}),
    ...(end.hostRun ? { hostRun: end.hostRun } : {}),
    ...(end.egress ? { egress: end.egress } : {}),
    ...(end.remote ? { remote: end.remote } : {}),
    ...(end.work ? { work: end.work } : {}),
    ...(end.entrypoint ? { entrypoint: end.entrypoint } : {}),
    ...(end.planted ? { planted: end.planted } : {}),
    ...(end.shells ? { shells: end.shells } : {}),
    ...(end.published ? { published: end.published } : {}),
    ...(end.caches ? { caches: end.caches } : {}),
  };
}

/** The line of a refusal: the error's code as the reason, its exit code as the status. */
export function refusedLine(
  identity: SessionIdentity,
  err: unknown,
  extra: Pick<LedgerLine, 'remote' | 'work'> = {},
): { line: LedgerLine; exitCode: number; message: string } {
  const { document, exitCode } = toErrorDocument(err);
  return {
    exitCode,
    message: document.error.message,
    line: {
      ...identityFields(identity),
      endedAt: new Date().toISOString(),
      exitCode: ledgerExit(exitCode),
      outcome: 'refused',
      reason: document.error.code,
      message: document.error.message,
      peak: null,
      ...extra,
    },
  };
}

/**
 * Writes the ledger line and the result file; a failure to write either is reported, not
 * hidden. Both get the line as bounded (under 64 KiB, bound.ts), which is returned.
 */
export function recordVerdict(targets: VerdictTargets, line: LedgerLine, log: (l: string) => void): LedgerLine {
  let written = line;
  try {
    written = appendLedger(targets.ledgerFile, line);
  } catch (err) {
    written = boundedLedgerLine(line);
    log(`agent-sandbox: could not write the ledger ${targets.ledgerFile}: ${(err as Error).message}`);
  }
  if (written.truncated)
    log(
      `agent-sandbox: the ledger line of ${forTerminal(line.sessionId)} was ${written.truncated.bytes} bytes; cut to under 64 KiB (${written.truncated.fields.map(forTerminal).join(', ')})`,
    );
  if (targets.resultFile) {
    try {
      mkdirSync(path.dirname(targets.resultFile), { recursive: true });
      writeFileSync(targets.resultFile, `${JSON.stringify(written)}\n`, { mode: 0o600 });
    } catch (err) {
      log(`agent-sandbox: could not write --result-file ${targets.resultFile}: ${(err as Error).message}`);
    }
  }
  return written;
}

/**
 * `agent-sandbox workspace list`: every workspace in the root (made by `workspace new`, by the
 * receiver on a node, or by hand), with its repository, its checked-out branch, whether a
 * session holds it now, how many paths git status lists, and its last session in the ledger.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { containerWorkspace } from '@agent-sandbox/shared/container-layout';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { WorkspaceEntry, WorkspaceListOutput } from '@agent-sandbox/shared/schemas/workspace';
import { detectGit, waitingRefs } from '@agent-sandbox/mount-plan';
import { boundedList, describeBounded } from '@agent-sandbox/shared/bounded-list';
import { refForTerminal } from '@agent-sandbox/shared/terminal-text';
import { runGit, statusTimeoutMs, uncommittedPaths, type GitPlace } from '@agent-sandbox/shared/git-run';
import { checkWorkspaceId, layoutFor } from './layout.js';
import { isLockHeld } from '@agent-sandbox/shared/flock';
import { parseLines, tailOf } from '../ledger/read.js';
import { listWorkspaceRecords, type WorkspaceRecord } from './record.js';

/** The last ledger line of each session id, read from the ledger's end (ledger/read.ts). */
export function lastSessions(ledgerFile: string, tailBytes = 16 << 20): Map<string, LedgerLine> {
  return new Map(parseLines(tailOf(ledgerFile, tailBytes).text).map(({ line }) => [line.sessionId, line]));
}

/** True when a session holds the workspace's lock now (a probe: taken and given back at once). */
export function isBusy(lockFile: string): boolean {
  return existsSync(lockFile) && isLockHeld(lockFile);
}

/** Where git finds a workspace's metadata, named explicitly (git-run.ts), or undefined when it is not git. */
export async function gitPlaceOf(workspace: string, id: string): Promise<GitPlace | undefined> {
  try {
    const git = await detectGit({ workspace, containerWorkspace: containerWorkspace(id) });
    if (git.kind === 'none' || !git.gitDir) return undefined;
    return {
      gitDir: git.gitDir,
      ...(git.commonDir && git.commonDir !== git.gitDir ? { commonDir: git.commonDir } : {}),
      workTree: workspace,
    };
  } catch {
    return undefined;
  }
}

async function entryOf(
  root: string,
  id: string,
  record: WorkspaceRecord | undefined,
  last: Map<string, LedgerLine>,
): Promise<WorkspaceEntry> {
  const layout = layoutFor(root, id);
  const place = existsSync(layout.workspace) ? await gitPlaceOf(layout.workspace, id) : undefined;
  let branch: string | null = null;
  let uncommitted: number | null = null;
  let waiting: string[] = [];
  const busy = isBusy(layout.lockFile);
  if (place) {
    waiting = waitingRefs(place, id);
    const head = runGit(place, ['symbolic-ref', '--quiet', '--short', 'HEAD'], { allowFail: true, timeoutMs: statusTimeoutMs });
    branch = head.status === 0 ? head.stdout.trim() : null;
    // A running session's tree is the session's: a status would race its writes (and meet what it is making), so none.
    if (!busy) {
      try {
        uncommitted = uncommittedPaths(place).length;
      } catch {
        uncommitted = null;
      }
    }
  }
  const line = last.get(id);
  return {
    id,
    workspace: layout.workspace,
    repository: record?.repository ?? null,
    branch,
    origin: record?.origin ?? null,
    busy,
    uncommitted,
    lastSession: line
      ? {
          startedAt: line.startedAt,
          endedAt: line.endedAt,
          outcome: line.outcome,
          reason: line.reason,
          exitCode: line.exitCode,
          host: line.host,
        }
      : null,
    waiting: boundedList(waiting, 20),
  };
}

export async function workspaceList(root: string, ledgerFile: string): Promise<WorkspaceListOutput> {
  const records = new Map(listWorkspaceRecords(root).map((r) => [r.id, r]));
  let dirs: string[] = [];
  try {
    dirs = readdirSync(path.join(root, 'workspaces'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    // no root yet: no workspaces
  }
  const ids = [...new Set([...records.keys(), ...dirs])].filter((id) => {
    try {
      return checkWorkspaceId(id) === id;
    } catch {
      return false;
    }
  });
  const last = lastSessions(ledgerFile);
  const workspaces: WorkspaceEntry[] = [];
  for (const id of ids.sort()) workspaces.push(await entryOf(root, id, records.get(id), last));
  return { ok: true, root, ledger: ledgerFile, workspaces };
}

/** The human table (stderr): one row per workspace, then the refs where sessions' commits wait. */
export function formatWorkspaceList(doc: WorkspaceListOutput): string[] {
  if (doc.workspaces.length === 0) return [`no workspaces in ${doc.root}`];
  const rows = [['ID', 'REPOSITORY', 'BRANCH', 'LAST SESSION', 'UNCOMMITTED', 'WAITING']];
  for (const w of doc.workspaces) {
    const s = w.lastSession;
    const lastText = s
      ? `${s.endedAt.replace(/\.\d+Z$/, 'Z')} ${s.outcome} ${s.reason} exit ${s.exitCode}${s.host !== 'local' ? ` on ${s.host}` : ''}`
      : 'none';
    rows.push([
      `${w.id}${w.busy ? ' (running)' : ''}`,
      w.repository ?? (w.origin === null ? '(not made by workspace new)' : '-'),
      w.branch ?? '-',
      lastText,
      w.uncommitted === null ? '-' : w.uncommitted === 0 ? 'clean' : `${w.uncommitted} path${w.uncommitted === 1 ? '' : 's'}`,
      waitingCount(w.waiting),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const table = rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
  const waits = doc.workspaces.filter((w) => w.waiting.named.length > 0);
  return [
    ...table,
    ...waits.map(
      (w) =>
        `${w.id}: commits wait at ${describeBounded({ named: w.waiting.named.map((r) => refForTerminal(r)), others: w.waiting.others })} (git merge <ref>, then git update-ref -d <ref>)`,
    ),
  ];
}

function waitingCount(w: WorkspaceEntry['waiting']): string {
  const n = w.named.length + w.others;
  return n === 0 ? '-' : `${n} ref${n === 1 ? '' : 's'}`;
}

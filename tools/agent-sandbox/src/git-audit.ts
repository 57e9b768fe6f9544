/**
 * The session's git, around the run: mount-plan's git-dir view made before the container
 * starts (so nothing the session writes changes what the host's git runs), and, once the
 * container is gone, the view finished (removed, a plain repository's HEAD and index copied
 * back) and what the session changed that a mount cannot prevent: refs outside its own branch
 * (refs are one shared directory) and nested repositories in the workspace. Both are printed on
 * stderr and go to the ledger line.
 */
import { diffNestedGit, diffRefs, finishGitView, prepareGitView, scanNestedGit, sessionOwnRefs, snapshotRefs, type NestedScan, type RefSnapshot } from '@agent-sandbox/mount-plan';
import type { GitViewReport, MountPlanOutput, NestedGitChange, RefChange } from '@agent-sandbox/shared/schemas/mount-plan';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';

export interface GitAudit {
  refs: RefChange[];
  nestedGit: NestedGitChange[];
  /** What finishing the view did, when it did anything worth saying. */
  gitView?: GitViewReport;
}

export interface GitSession {
  /** Finishes the view and reports; call once the container is gone (idempotent). */
  finish(): Promise<GitAudit>;
}

const empty = (report: GitViewReport) => Object.values(report).every((list) => list.length === 0);

/** Prepares the view and takes the "before" snapshots. Throws 87 when the view cannot be made. */
export async function startGitSession(mounts: MountPlanOutput, workspace: string): Promise<GitSession> {
  const view = mounts.gitView;
  if (view) await prepareGitView(view);
  const commonDir = mounts.git.commonDir ?? mounts.git.gitDir;
  const refsBefore: RefSnapshot | undefined = commonDir ? await snapshotRefs(commonDir) : undefined;
  // The walk overlaps the container's start; what it has seen by then is the session's "before".
  const nestedBefore: Promise<NestedScan> | undefined = mounts.git.kind !== 'none' ? scanNestedGit(workspace) : undefined;
  let done: Promise<GitAudit> | undefined;
  return {
    finish: () =>
      (done ??= (async () => {
        const finished = view ? await finishGitView(view.dir) : undefined;
        const refs = refsBefore && commonDir ? diffRefs(refsBefore, await snapshotRefs(commonDir), sessionOwnRefs(refsBefore, mounts.git.worktreeName)) : [];
        const nestedGit = nestedBefore ? diffNestedGit(await nestedBefore, await scanNestedGit(workspace)) : [];
        const report = finished ? { copiedBack: finished.copiedBack, conflicts: finished.conflicts, invalid: finished.invalid, dropped: finished.dropped, inProgress: finished.inProgress } : undefined;
        return { refs, nestedGit, ...(report && !empty(report) ? { gitView: report } : {}) };
      })()),
  };
}

/** The human lines for stderr: what changed that the user should look at (every name the session chose escaped). */
export function describeGitAudit(audit: GitAudit): string[] {
  const lines = audit.refs.map((r) => `agent-sandbox: ref ${forTerminal(r.name)} changed during the session: ${forTerminal(r.old ?? '(none)')} -> ${forTerminal(r.new ?? '(deleted)')}`);
  for (const n of audit.nestedGit) lines.push(`agent-sandbox: a nested git ${n.type} was ${n.change} at ${forTerminal(n.path)}: do not run git there before you have looked at it`);
  if (audit.gitView?.conflicts.length) lines.push(`agent-sandbox: kept the host's ${audit.gitView.conflicts.map((c) => forTerminal(c)).join(', ')} (changed on the host during the session); the session's copies were dropped`);
  return lines;
}

/**
 * The client's side of carrying work: a workspace made here with `workspace new`, dispatched
 * with `run --host NODE --workspace ID`, goes to the node as a bundle of its checked-out branch
 * (the request line, then the bundle's bytes: receive-work.ts). The local workspace is locked
 * for the whole dispatch (a second session on it is refused, 92). Afterwards the commits the
 * session made come back (the forced command's second request kind), are checked like any
 * bundle, and come home through mount-plan's importBranch, the one import a local session's
 * store goes through too: the branch and the local worktree advance when that is a
 * fast-forward; otherwise the commits wait at refs/agent-sandbox/returned/<id>.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import type { HostEntry } from '@agent-sandbox/shared/schemas/agent-sandbox-hosts';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { BundleFacts, WorkOffer, WorkTransfer } from '@agent-sandbox/shared/schemas/workspace';
import { guardPath } from '@agent-sandbox/path-guard';
import { importBranch, restoreImportOwner, type Advance } from '@agent-sandbox/mount-plan';
import { chownTree } from '../git/grant.js';
import { runGit, uncommittedPaths, type GitPlace } from '@agent-sandbox/shared/git-run';
import { layoutFor } from '../workspace/layout.js';
import type { LaunchRequest } from '../session/request.js';
import type { HeldLock } from '@agent-sandbox/shared/flock';
import { lockWorkspace } from '../workspace/lock.js';
import { fetchOverSsh } from './ssh.js';
import { checkBundle, makeBundle, mirrorNameOf, sha256File } from './work-bundle.js';
import { gitPlaceOf } from '../workspace/list.js';
import { readWorkspaceRecord } from '../workspace/record.js';

export interface CarriedWork {
  id: string;
  offer: WorkOffer;
  bundleFile: string;
  sent: BundleFacts;
  commonDir: string;
  place: GitPlace;
  /** Paths uncommitted in the local worktree: they do not travel. */
  localUncommitted: number;
  scratch: string;
  lock: HeldLock;
  release(): void;
}

/** The local workspace's work, when it was made by `workspace new`; undefined for a workspace that lives on the node only. */
export async function prepareWork(request: LaunchRequest): Promise<CarriedWork | undefined> {
  if (request.workspace.includes('/') || !existsSync(request.root)) return undefined;
  const root = (await guardPath({ path: request.root, root: request.root, kind: 'directory' })).resolved;
  const id = request.workspace;
  const record = readWorkspaceRecord(root, id);
  if (!record || record.origin !== 'local') return undefined;
  const layout = layoutFor(root, id);
  const lock = lockWorkspace(layout.lockFile, layout.recordFile, id, 'sending the workspace to a node');
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'agent-sandbox-work-'));
  const release = () => {
    rmSync(scratch, { recursive: true, force: true });
    lock.release();
  };
  try {
    const place = await gitPlaceOf(layout.workspace, id);
    if (place?.commonDir !== record.commonDir)
      throw new ToolError('gitMount', 'workspace-git-moved', `workspace ${id}'s git metadata no longer names ${record.commonDir}`);
    const branch = runGit(place, ['symbolic-ref', '--quiet', 'HEAD'], { allowFail: true }).stdout.trim();
    if (!branch.startsWith('refs/heads/'))
      throw new ToolError(
        'usage',
        'workspace-detached',
        `workspace ${id} has no branch checked out (detached HEAD): check out a branch to dispatch it`,
      );
    const bundleFile = path.join(scratch, 'send.bundle');
    const sent = (await makeBundle({ gitDir: record.commonDir }, branch, bundleFile))!;
    const offer: WorkOffer = {
      branch,
      tip: sent.tip,
      bytes: sent.bytes,
      sha256: sent.sha256,
      mirror: mirrorNameOf(record.commonDir, record.repository),
    };
    return {
      id,
      offer,
      bundleFile,
      sent,
      commonDir: record.commonDir,
      place,
      localUncommitted: uncommittedPaths(place).length,
      scratch,
      lock,
      release,
    };
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * The local worktree follows the branch: `git merge --ff-only` keeps local uncommitted changes
 * the new commits do not touch, and refuses otherwise (then the commits wait at the side ref).
 */
function mergeInWorktree(work: CarriedWork): Advance {
  return (_from, to) => {
    const head = runGit(work.place, ['symbolic-ref', '--quiet', 'HEAD'], { allowFail: true }).stdout.trim();
    if (head !== work.offer.branch) return { ok: false, why: `the local worktree no longer has ${work.offer.branch} checked out` };
    const merged = runGit(work.place, ['merge', '--ff-only', '--quiet', to], { allowFail: true });
    if ((process.geteuid?.() ?? 0) === 0 && work.place.workTree) {
      chownTree(work.place.workTree);
      chownTree(work.place.gitDir);
    }
    return merged.status === 0
      ? { ok: true }
      : { ok: false, why: `the local worktree's uncommitted changes are in the way (${merged.stderr.trim().split('\n').pop()})` };
  };
}

/** Fetches the returned bundle into the local repository through the one checked import. */
async function fetchBack(
  work: CarriedWork,
  host: HostEntry,
  runId: string,
  returned: BundleFacts,
): Promise<Pick<WorkTransfer, 'fetched' | 'sideRef' | 'message'>> {
  const file = path.join(work.scratch, 'return.bundle');
  const got = await fetchOverSsh(
    host,
    { version: 1, kind: 'return', nodeMachineId: host.machineId, workspaceId: work.id, runId },
    file,
    returned.bytes,
  );
  if (got.exitCode !== 0)
    throw new ToolError(
      'unreachable',
      'return-failed',
      `fetching the session's commits from ${host.name} failed (exit ${got.exitCode}): ${got.stderrTail || 'no message'}`,
    );
  const sha256 = await sha256File(file);
  if (got.bytes !== returned.bytes || sha256 !== returned.sha256) {
    throw new ToolError(
      'usage',
      'bundle-checksum',
      `the returned bundle is ${got.bytes} bytes with sha256 ${sha256}; the node announced ${returned.bytes} bytes, ${returned.sha256}`,
    );
  }
  checkBundle({ file, ref: work.offer.branch, tip: returned.tip, prerequisitesIn: { gitDir: work.commonDir } }, work.scratch);
  const branch = work.offer.branch;
  let parkedAt: string | undefined;
  try {
    const result = importBranch({
      place: { gitDir: work.commonDir },
      source: file,
      ref: branch,
      tip: returned.tip,
      branch,
      sessionId: work.id,
      advance: mergeInWorktree(work),
    });
    parkedAt = result.sideRef;
    if (result.outcome === 'side-ref') return { fetched: 'side-ref', sideRef: result.sideRef!, message: result.message! };
    return { fetched: 'fast-forward' };
  } finally {
    restoreImportOwner(work.commonDir, [branch, ...(parkedAt ? [parkedAt] : [])]);
  }
}

/** What the work did, for the client's ledger line: the node's account and what came back. */
export async function bringBack(work: CarriedWork, host: HostEntry, verdict: Partial<LedgerLine> | undefined): Promise<WorkTransfer> {
  const node = verdict?.work;
  const base: WorkTransfer = { ...(node ?? { branch: work.offer.branch }), sent: work.sent };
  const notes = [
    work.localUncommitted > 0 ? `${work.localUncommitted} uncommitted paths in the local workspace did not travel` : '',
    node?.message ?? '',
  ].filter(Boolean);
  const withNotes = (t: WorkTransfer, extra?: string): WorkTransfer => {
    const message = [...notes, extra ?? ''].filter(Boolean).join('; ');
    return { ...t, ...(message ? { message } : {}) };
  };
  if (!node?.returned || !verdict?.runId) return withNotes({ ...base, fetched: 'none' });
  const began = performance.now();
  try {
    const result = await fetchBack(work, host, verdict.runId, node.returned);
    const returned = { ...node.returned, ms: Math.round(performance.now() - began) };
    return withNotes(
      { ...base, returned, fetched: result.fetched, ...(result.sideRef ? { sideRef: result.sideRef } : {}) },
      result.message,
    );
  } catch (err) {
    return withNotes({ ...base, fetched: 'failed' }, (err as Error).message);
  }
}

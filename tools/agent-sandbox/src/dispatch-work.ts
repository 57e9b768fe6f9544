/**
 * The client's side of carrying work: a workspace made here with `workspace new`, dispatched
 * with `run --host NODE --workspace ID`, goes to the node as a bundle of its checked-out branch
 * (the request line, then the bundle's bytes: receive-work.ts). The local workspace is locked
 * for the whole dispatch (a second session on it is refused, 92). Afterwards the commits the
 * session made come back (the forced command's second request kind), are checked like any
 * bundle, fetched into the local repository, and the branch and the local worktree advance
 * when that is a fast-forward; otherwise they wait at refs/agent-sandbox/returned/<id>.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import type { HostEntry, LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { BundleFacts, WorkOffer, WorkTransfer } from '@agent-sandbox/shared/schemas/workspace';
import { guardPath } from '@agent-sandbox/path-guard';
import { chownTree, restoreOwner } from './git-grant.js';
import { runGit, uncommittedPaths, type GitPlace } from './git-run.js';
import { layoutFor } from './layout.js';
import type { LaunchRequest } from './request.js';
import { lockWorkspace, type HeldLock } from './session-lock.js';
import { fetchOverSsh } from './ssh-dispatch.js';
import { checkBundle, fetchBundle, makeBundle, mirrorNameOf, sha256File } from './work-bundle.js';
import { gitPlaceOf } from './workspace-list.js';
import { readWorkspaceRecord } from './workspace-record.js';

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
    if (place?.commonDir !== record.commonDir) throw new ToolError('gitMount', 'workspace-git-moved', `workspace ${id}'s git metadata no longer names ${record.commonDir}`);
    const branch = runGit(place, ['symbolic-ref', '--quiet', 'HEAD'], { allowFail: true }).stdout.trim();
    if (!branch.startsWith('refs/heads/')) throw new ToolError('usage', 'workspace-detached', `workspace ${id} has no branch checked out (detached HEAD): check out a branch to dispatch it`);
    const bundleFile = path.join(scratch, 'send.bundle');
    const sent = (await makeBundle({ gitDir: record.commonDir }, branch, bundleFile))!;
    const offer: WorkOffer = { branch, tip: sent.tip, bytes: sent.bytes, sha256: sent.sha256, mirror: mirrorNameOf(record.commonDir, record.repository) };
    return { id, offer, bundleFile, sent, commonDir: record.commonDir, place, localUncommitted: uncommittedPaths(place).length, scratch, lock, release };
  } catch (err) {
    release();
    throw err;
  }
}

/** Fetches the returned bundle into the local repository and moves the branch and worktree forward when it is a fast-forward. */
async function fetchBack(work: CarriedWork, host: HostEntry, runId: string, returned: BundleFacts): Promise<Pick<WorkTransfer, 'fetched' | 'sideRef' | 'message'>> {
  const file = path.join(work.scratch, 'return.bundle');
  const got = await fetchOverSsh(host, { version: 1, kind: 'return', nodeMachineId: host.machineId, workspaceId: work.id, runId }, file, returned.bytes);
  if (got.exitCode !== 0) throw new ToolError('unreachable', 'return-failed', `fetching the session's commits from ${host.name} failed (exit ${got.exitCode}): ${got.stderrTail || 'no message'}`);
  const sha256 = await sha256File(file);
  if (got.bytes !== returned.bytes || sha256 !== returned.sha256) {
    throw new ToolError('usage', 'bundle-checksum', `the returned bundle is ${got.bytes} bytes with sha256 ${sha256}; the node announced ${returned.bytes} bytes, ${returned.sha256}`);
  }
  checkBundle({ file, ref: work.offer.branch, tip: returned.tip, prerequisitesIn: { gitDir: work.commonDir } }, work.scratch);
  const sideRef = `refs/agent-sandbox/returned/${work.id}`;
  fetchBundle({ gitDir: work.commonDir }, file, work.offer.branch, sideRef);
  const local = runGit({ gitDir: work.commonDir }, ['rev-parse', '--verify', `${work.offer.branch}^{commit}`]).stdout.trim();
  const fastForward = runGit({ gitDir: work.commonDir }, ['merge-base', '--is-ancestor', local, returned.tip], { allowFail: true }).status === 0;
  const head = runGit(work.place, ['symbolic-ref', '--quiet', 'HEAD'], { allowFail: true }).stdout.trim();
  restoreOwner(work.commonDir, [work.place.gitDir]);
  if (!fastForward || head !== work.offer.branch) {
    const why = !fastForward ? `${work.offer.branch} moved here while the session ran` : `the local worktree no longer has ${work.offer.branch} checked out`;
    return { fetched: 'side-ref', sideRef, message: `${why}: the session's commits are at ${sideRef} (git merge ${sideRef})` };
  }
  // git merge --ff-only keeps local uncommitted changes that the new commits do not touch, and refuses otherwise.
  const merged = runGit(work.place, ['merge', '--ff-only', '--quiet', returned.tip], { allowFail: true });
  if ((process.geteuid?.() ?? 0) === 0 && work.place.workTree) {
    restoreOwner(work.commonDir, [work.place.gitDir]);
    chownTree(work.place.workTree);
    chownTree(work.place.gitDir);
  }
  if (merged.status !== 0) {
    return { fetched: 'side-ref', sideRef, message: `the local worktree's uncommitted changes are in the way (${merged.stderr.trim().split('\n').pop()}): the session's commits are at ${sideRef}` };
  }
  runGit({ gitDir: work.commonDir }, ['update-ref', '-d', sideRef], { allowFail: true });
  return { fetched: 'fast-forward' };
}

/** What the work did, for the client's ledger line: the node's account and what came back. */
export async function bringBack(work: CarriedWork, host: HostEntry, verdict: Partial<LedgerLine> | undefined): Promise<WorkTransfer> {
  const node = verdict?.work;
  const base: WorkTransfer = { ...(node ?? { branch: work.offer.branch }), sent: work.sent };
  const notes = [work.localUncommitted > 0 ? `${work.localUncommitted} uncommitted paths in the local workspace did not travel` : '', node?.message ?? ''].filter(Boolean);
  const withNotes = (t: WorkTransfer, extra?: string): WorkTransfer => {
    const message = [...notes, extra ?? ''].filter(Boolean).join('; ');
    return { ...t, ...(message ? { message } : {}) };
  };
  if (!node?.returned || !verdict?.runId) return withNotes({ ...base, fetched: 'none' });
  const began = performance.now();
  try {
    const result = await fetchBack(work, host, verdict.runId, node.returned);
    const returned = { ...node.returned, ms: Math.round(performance.now() - began) };
    return withNotes({ ...base, returned, fetched: result.fetched, ...(result.sideRef ? { sideRef: result.sideRef } : {}) }, result.message);
  } catch (err) {
    return withNotes({ ...base, fetched: 'failed' }, (err as Error).message);
  }
}

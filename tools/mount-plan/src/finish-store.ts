/**
 * finishGitStore: after the container is gone, the session's branch comes home and the store
 * goes. Idempotent, and works from the store directory alone (store.json), so the sentinel or
 * the next launcher start can run it for a launcher that died.
 *
 * 1. The store's refs are read (store-refs.ts, no git process) and compared with the snapshot
 *    written at start: every ref the session made, moved or deleted besides its branch
 *    (replace refs and notes included) is dropped, 20 named, then a count.
 * 2. When the branch moved: a reader repository takes the session's object files
 *    (store-reader.ts), and importBranch fetches the one branch from it with full checks and
 *    fast-forwards it here, or leaves it at refs/agent-sandbox/returned/<id>.
 * 3. HEAD and index (return-worktree.ts).
 * 4. The store is removed (node's rm never follows a link inside it).
 * A failed check is reported (`failed`), and the store goes all the same: what it held is what
 * the session broke itself, and it must not pile up.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, rmSync } from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import { removeBeneath } from '@agent-sandbox/shared/beneath';
import { boundedList } from '@agent-sandbox/shared/bounded-list';
import type { GitReturn } from '@agent-sandbox/shared/schemas/mount-plan';
import { importBranch, restoreImportOwner, sideRefOf, type ImportResult } from './import-branch.js';
import { manifestName, snapshotName, type StoreManifest } from './prepare-store.js';
import { leftInStore, returnWorktreeFiles } from './return-worktree.js';
import { buildReader } from './store-reader.js';
import { droppedRefs, parsePackedRefs, readStoreRefs } from './store-refs.js';

export interface FinishOptions {
  /** Who finishes it when not the launcher that made it (the ledger's `by`). */
  by?: string;
}

const oid = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

function readManifest(dir: string): StoreManifest | undefined {
  let fd: number;
  try {
    fd = openSync(`${dir}/${manifestName}`, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    if (!fstatSync(fd).isFile()) throw new Error('not a file');
    const manifest = JSON.parse(readFileSync(fd, 'utf8')) as StoreManifest;
    if (manifest.version !== 2 || manifest.store?.dir !== dir) throw new Error('not a manifest of this store');
    return manifest;
  } catch (err) {
    throw new ToolError('internal', 'git-store-manifest', `${dir}/${manifestName}: ${(err as Error).message}`);
  } finally {
    closeSync(fd);
  }
}

type Outcome = Pick<GitReturn, 'outcome' | 'from' | 'to' | 'sideRef' | 'message'>;

/** Brings the branch home when it moved; the outcome in the ledger's terms. */
function importMoved(m: StoreManifest, tip: string | undefined): Outcome {
  const { branch, startTip } = m;
  if (branch === null) return { outcome: 'none', from: null, to: null, message: 'HEAD was detached at start: the session had no branch to bring home' };
  if (tip === undefined) return { outcome: 'none', from: startTip, to: null, message: `the session deleted ${branch}` };
  if (!oid.test(tip)) return { outcome: 'failed', from: startTip, to: null, message: `${branch} in the store is not an object id (${tip.slice(0, 60)})` };
  if (tip === startTip) return { outcome: 'unchanged', from: startTip, to: tip };
  const reader = `${m.store.dir}/import.git`;
  try {
    buildReader(reader, `${m.store.dir}/common`, `${m.store.gitDir}/objects`, branch, tip);
    const result: ImportResult = importBranch({ place: { gitDir: m.store.gitDir }, source: reader, ref: branch, tip, branch, sessionId: m.sessionId, unbornAtStart: startTip === null });
    return { outcome: result.outcome, from: result.from, to: result.to, ...(result.sideRef ? { sideRef: result.sideRef } : {}), ...(result.message ? { message: result.message } : {}) };
  } catch (err) {
    return { outcome: 'failed', from: startTip, to: tip, message: `${branch} was not brought home: ${(err as Error).message}` };
  } finally {
    restoreImportOwner(m.store.gitDir, [branch, sideRefOf(m.sessionId)]);
    rmSync(reader, { recursive: true, force: true });
  }
}

export type FinishReport = GitReturn & { absent: boolean };

/** Finishes the store in `dir` (`<root>/git-stores/<id>`). Call only once the container is gone. */
export function finishGitStore(dir: string, options: FinishOptions = {}): FinishReport {
  const began = performance.now();
  const manifest = readManifest(dir);
  const empty = { named: [], others: 0 };
  const base: FinishReport = { absent: true, branch: null, outcome: 'none', from: null, to: null, refsDropped: empty, copiedBack: [], kept: [], leftInStore: empty, prepareMs: 0, ms: 0 };
  if (!manifest) {
    // prepare died before its manifest: nothing was handed to a session.
    if (lstatSync(dir, { throwIfNoEntry: false })) removeStore(dir);
    return base;
  }
  try {
    const before = new Map<string, string>();
    parsePackedRefs(readFileSync(`${dir}/${snapshotName}`, 'latin1'), before);
    const after = readStoreRefs(`${dir}/common`);
    const outcome = importMoved(manifest, manifest.branch ? after.refs.get(manifest.branch) : undefined);
    const worktree = returnWorktreeFiles(manifest, outcome.outcome === 'fast-forward' || outcome.outcome === 'unchanged');
    const dropped = droppedRefs(before, after.refs, manifest.branch);
    const truncated = after.truncated ? ' (the store held more refs than were read)' : '';
    return {
      absent: false,
      branch: manifest.branch,
      ...outcome,
      ...(truncated ? { message: `${outcome.message ?? ''}${truncated}`.trim() } : {}),
      refsDropped: dropped,
      ...worktree,
      leftInStore: boundedList(leftInStore(manifest), 20),
      ...(options.by ? { by: options.by } : {}),
      prepareMs: manifest.ms,
      ms: Math.round(performance.now() - began),
    };
  } finally {
    removeStore(dir);
  }
}

/** The store, removed beneath `<root>/git-stores` without following a link (rm never follows one inside). */
function removeStore(dir: string): void {
  removeBeneath(dir.slice(0, dir.lastIndexOf('/')), dir);
}

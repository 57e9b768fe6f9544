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
 * 4. The store is removed (node's rm never follows a link inside it), unless the import failed
 *    for a cause outside the session's content (import-fault.ts: a lock held on the branch, a
 *    full disk, git killed): then it is kept with its commits (kept-store.ts, `storeKept`), and
 *    a later finish retries. A failure the session's content caused (it deleted its own
 *    objects, or wrote one git refuses) is reported (`failed`) and the store goes: those commits
 *    cannot come home, and the store must not pile up.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import { removeBeneath } from '@agent-sandbox/shared/beneath';
import { boundedList } from '@agent-sandbox/shared/bounded-list';
import type { GitReturn } from '@agent-sandbox/shared/schemas/mount-plan';
import { importBranch, restoreImportOwner } from './import-branch.js';
import { contentFault } from './import-fault.js';
import { readKept, recordKept, storeKeptOf, type KeptState } from './kept-store.js';
import { manifestName, snapshotName, type StoreManifest } from '../store/prepare-store.js';
import { leftInStore, returnWorktreeFiles } from './return-worktree.js';
import { makeReader, setReaderRef } from '../store/store-reader.js';
import { droppedRefs, parsePackedRefs, readStoreRefs } from '../store/store-refs.js';

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

type Outcome = Pick<GitReturn, 'outcome' | 'from' | 'to' | 'sideRef' | 'message'> & {
  /** A cause outside the session's content: the store is kept for a retry. */
  keep?: string;
};

/** Brings the branch home when it moved; the outcome in the ledger's terms. */
function importMoved(m: StoreManifest, tip: string | undefined): Outcome {
  const { branch, startTip } = m;
  if (branch === null)
    return { outcome: 'none', from: null, to: null, message: 'HEAD was detached at start: the session had no branch to bring home' };
  if (tip === undefined) return { outcome: 'none', from: startTip, to: null, message: `the session deleted ${branch}` };
  if (!oid.test(tip))
    return { outcome: 'failed', from: startTip, to: null, message: `${branch} in the store is not an object id (${tip.slice(0, 60)})` };
  if (tip === startTip) return { outcome: 'unchanged', from: startTip, to: tip };
  const reader = `${m.store.dir}/import.git`;
  let made = false;
  let parkedAt: string | undefined;
  try {
    makeReader(reader, `${m.store.dir}/common`, `${m.store.gitDir}/objects`);
    made = true;
    setReaderRef(reader, branch, tip);
    const parked = readKept(m.store.dir)?.sideRef;
    const result = importBranch({
      place: { gitDir: m.store.gitDir },
      source: reader,
      ref: branch,
      tip,
      branch,
      sessionId: m.sessionId,
      unbornAtStart: startTip === null,
      ...(parked ? { parked } : {}),
    });
    parkedAt = result.sideRef;
    const outcome: Outcome = {
      outcome: result.outcome,
      from: result.from,
      to: result.to,
      ...(result.sideRef ? { sideRef: result.sideRef } : {}),
      ...(result.message ? { message: result.message } : {}),
    };
    return result.advanceFailed ? { ...outcome, keep: `${branch} could not be advanced here: ${result.advanceFailed}` } : outcome;
  } catch (err) {
    const fault = made ? contentFault(reader, tip, startTip) : undefined;
    const why = (err as Error).message;
    if (fault) return { outcome: 'failed', from: startTip, to: tip, message: `${branch} was not brought home: ${fault} (${why})` };
    return { outcome: 'failed', from: startTip, to: tip, message: `${branch} was not brought home yet: ${why}`, keep: why };
  } finally {
    restoreImportOwner(m.store.gitDir, [branch, ...(parkedAt ? [parkedAt] : [])]);
    rmSync(reader, { recursive: true, force: true });
  }
}

export type FinishReport = GitReturn & { absent: boolean };

/** Finishes the store in `dir` (`<root>/git-stores/<id>`). Call only once the container is gone. */
export function finishGitStore(dir: string, options: FinishOptions = {}): FinishReport {
  const began = performance.now();
  const manifest = readManifest(dir);
  const empty = { named: [], others: 0 };
  const base: FinishReport = {
    absent: true,
    branch: null,
    outcome: 'none',
    from: null,
    to: null,
    refsDropped: empty,
    copiedBack: [],
    kept: [],
    leftInStore: empty,
    prepareMs: 0,
    ms: 0,
  };
  let removed: string | undefined;
  if (!manifest) {
    // prepare died before its manifest: nothing was handed to a session.
    if (lstatSync(dir, { throwIfNoEntry: false })) removed = removeStore(dir);
    return removed ? { ...base, message: removed } : base;
  }
  let kept: KeptState | undefined;
  let report: FinishReport;
  try {
    report = finishFrom(dir, manifest, options, began, (why, sideRef) => (kept = keepStore(dir, why, sideRef)));
  } catch (err) {
    // Nothing foreseen: the store (and whatever commits it holds) is kept, and the error said.
    kept ??= keepStore(dir, (err as Error).message);
    throw err;
  } finally {
    if (!kept) removed = removeStore(dir);
  }
  return removed ? { ...report, message: `${report.message ? `${report.message}; ` : ''}${removed}` } : report;
}

/** The import, the worktree's files and the refs' report, once the manifest is read. */
function finishFrom(
  dir: string,
  manifest: StoreManifest,
  options: FinishOptions,
  began: number,
  keep: (why: string, sideRef?: string) => KeptState,
): FinishReport {
  const before = new Map<string, string>();
  parsePackedRefs(readFileSync(`${dir}/${snapshotName}`), before);
  const after = readStoreRefs(`${dir}/common`);
  const { keep: keepWhy, ...outcome } = importMoved(manifest, manifest.branch ? after.refs.get(manifest.branch) : undefined);
  const kept = keepWhy ? keep(keepWhy, outcome.sideRef) : undefined;
  const worktree = returnWorktreeFiles(manifest, outcome);
  const dropped = droppedRefs(before, after.refs, manifest.branch, after.packedUnread);
  const truncated = after.truncated ? ' (the store held more refs than were read)' : '';
  return {
    absent: false,
    branch: manifest.branch,
    ...outcome,
    ...(truncated ? { message: `${outcome.message ?? ''}${truncated}`.trim() } : {}),
    refsDropped: dropped,
    ...worktree,
    leftInStore: boundedList(leftInStore(manifest), 20),
    ...(kept ? { storeKept: storeKeptOf(dir, kept) } : {}),
    ...(options.by ? { by: options.by } : {}),
    prepareMs: manifest.ms,
    ms: Math.round(performance.now() - began),
  };
}

/** Records a failed import in the store's kept.json; a store whose state cannot be written is kept all the same. */
function keepStore(dir: string, why: string, sideRef?: string): KeptState {
  try {
    return recordKept(dir, why, new Date(), sideRef);
  } catch (err) {
    const now = new Date().toISOString();
    return {
      version: 1,
      attempts: 1,
      why: `${why} (and kept.json could not be written: ${(err as Error).message})`,
      keptAt: now,
      lastAt: now,
    };
  }
}

/**
 * The store, removed beneath `<root>/git-stores` without following a link. A store that cannot
 * be removed does not change how the session ended (its agent's status and its branch stand):
 * it is moved aside, so the workspace's next session starts with a store of its own, and the
 * words for the end line are returned.
 */
function removeStore(dir: string): string | undefined {
  try {
    removeBeneath(dir.slice(0, dir.lastIndexOf('/')), dir);
    return undefined;
  } catch (err) {
    const aside = `${dir}.removing-${Date.now()}`;
    try {
      renameSync(dir, aside);
      return `the session's git store could not be removed (${(err as Error).message}); it is at ${aside}: remove it with rm -rf`;
    } catch {
      return `the session's git store could not be removed (${(err as Error).message}), nor moved aside: remove ${dir} with rm -rf before the workspace's next session`;
    }
  }
}

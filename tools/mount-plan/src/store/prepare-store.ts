/**
 * prepareGitStore: makes the store a plan describes (git-store.ts) on the host, right before
 * the container starts. Until it has run, the plan's store sources do not exist and podman
 * refuses to start: a launcher that forgets it fails closed. Nothing is written into the host's
 * repository.
 *
 * Below `<root>/git-stores/<id>/` (the launcher's, 0755):
 * - `common/` (the agent's): the symlinks into the live view, the mount points, objects/
 *   (`info/alternates` naming the read-only live objects), refs/, logs/, and packed-refs: the
 *   host's refs as one `git for-each-ref` printed them (measured in docs/performance.md);
 *   for a repository's own git dir also copies of HEAD and the index;
 * - `own/` (the agent's, a linked worktree only): the symlinks into the live view of its own
 *   gitdir, copies of its HEAD and index, empty logs/ and refs/;
 * - `snapshot` (the launcher's, 0600): the same refs, which the session cannot touch, compared
 *   with the store's after the session;
 * - `store.json` (0600): the plan, the session's branch (the one checked out at start), the
 *   copies' sha256, read back by finishGitStore (also by the sweep of a launcher that died).
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  constants,
  copyFileSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import { agentGid, agentUid } from '@agent-sandbox/shared/container-layout';
import type { GitStore } from '@agent-sandbox/shared/schemas/mount-plan';
import { gitLiveMount } from './git-store.js';
import { hashFileWithin } from './bounded-read.js';
import { branchOf, hostRefsSnapshot, parsePackedRefs, readPlainBounded } from './store-refs.js';

export interface CopiedFile {
  name: string;
  /** sha256 of the host file when copied in; null when it did not exist. */
  sha256: string | null;
}

export interface StoreManifest {
  version: 2;
  store: GitStore;
  sessionId: string;
  /** The session's branch: what HEAD named at start (refs/heads/...), or null (detached). */
  branch: string | null;
  /** The branch's value in the snapshot (null: unborn). */
  startTip: string | null;
  refCount: number;
  owner: { uid: number; gid: number };
  copied: CopiedFile[];
  /** The largest index (and HEAD) taken back from the session: its --disk, at most maxCopyBytes (absent in older stores: maxCopyBytes). */
  copyLimitBytes?: number;
  ms: number;
}

export const manifestName = 'store.json';
export const snapshotName = 'snapshot';

/** An index or HEAD larger than this is not copied (nor brought back, nor anything larger than the session's --disk). */
export const maxCopyBytes = 1 << 30;

export function sha256(data: Buffer | undefined | null): string | null {
  return data ? createHash('sha256').update(data).digest('hex') : null;
}

/** The agent's uid: 1000 when the launcher is root (sandbox-run's --user), else the launcher's own (keep-id). */
export function agentOwner(): { uid: number; gid: number } {
  const euid = process.geteuid?.() ?? 0;
  return euid === 0 ? { uid: agentUid, gid: agentGid } : { uid: euid, gid: process.getegid?.() ?? euid };
}

function own(path: string, owner: { uid: number; gid: number }): void {
  if (process.geteuid?.() === 0) lchownSync(path, owner.uid, owner.gid);
}

function mkdirOwned(path: string, owner: { uid: number; gid: number }): void {
  mkdirSync(path, { mode: 0o755 });
  own(path, owner);
}

function writeOwned(path: string, data: string | Buffer, owner: { uid: number; gid: number }): void {
  writeFileSync(path, data, { mode: 0o644, flag: 'wx' });
  own(path, owner);
}

/** The `<root>/git-stores` parent: a real directory (never a symlink), created when missing. */
function ensureStoresParent(dir: string): void {
  const parent = dir.slice(0, dir.lastIndexOf('/'));
  mkdirSync(parent, { recursive: true, mode: 0o755 });
  if (!lstatSync(parent).isDirectory()) throw new ToolError('unsafePath', 'symlink-escape', `${parent} is not a plain directory`);
}

/**
 * HEAD, the index and any split-index files of `from` (the host's own), copied into `to` by the
 * kernel and hashed 1 MiB at a time: a large index never sits whole in the launcher's memory.
 */
function copyWorktreeFiles(from: string, to: string, names: readonly string[], owner: { uid: number; gid: number }): CopiedFile[] {
  const all = [...names, ...readdirSync(from).filter((n) => /^sharedindex\.[0-9a-f]+$/.test(n))];
  return all.map((name) => {
    const hash = hashFileWithin(`${from}/${name}`, maxCopyBytes);
    if (hash) {
      copyFileSync(`${from}/${name}`, `${to}/${name}`, constants.COPYFILE_EXCL);
      chmodSync(`${to}/${name}`, 0o644);
      own(`${to}/${name}`, owner);
    }
    return { name, sha256: hash ?? null };
  });
}

/** The store's common/: links, mount points, the private objects/refs/logs and the refs snapshot. */
function makeCommon(store: GitStore, refsText: string, owner: { uid: number; gid: number }): void {
  const common = `${store.dir}/common`;
  mkdirOwned(common, owner);
  for (const link of store.links) symlinkSync(link.target, `${common}/${link.name}`);
  for (const name of store.mountPoints) mkdirOwned(`${common}/${name}`, owner);
  for (const sub of ['objects', 'objects/info', 'objects/pack', 'refs', 'refs/heads', 'refs/tags', 'logs'])
    mkdirOwned(`${common}/${sub}`, owner);
  writeOwned(`${common}/objects/info/alternates`, `${gitLiveMount}/objects\n`, owner);
  writeOwned(`${common}/packed-refs`, refsText, owner);
  for (const link of store.links) own(`${common}/${link.name}`, owner);
}

/** A linked worktree's own/: links into the live view of its gitdir, mount points, empty logs/ and refs/. */
function makeOwn(store: GitStore, owner: { uid: number; gid: number }): void {
  const dir = `${store.dir}/own`;
  mkdirOwned(dir, owner);
  for (const link of store.ownLinks) {
    symlinkSync(link.target, `${dir}/${link.name}`);
    own(`${dir}/${link.name}`, owner);
  }
  for (const name of [...store.ownMountPoints, 'logs', 'refs']) mkdirOwned(`${dir}/${name}`, owner);
}

/**
 * Makes the store, owned by `options.owner` (default: the agent's uid, agentOwner). Refuses (87, git-store-exists) when `<root>/git-stores/<id>` already exists:
 * a session with this id was not finished (finishGitStore first). Undoes itself on failure.
 */
export function prepareGitStore(
  store: GitStore,
  sessionId: string,
  options: { owner?: { uid: number; gid: number }; diskBytes?: number } = {},
): StoreManifest {
  const began = performance.now();
  ensureStoresParent(store.dir);
  try {
    mkdirSync(store.dir, { mode: 0o755 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    throw new ToolError('gitMount', 'git-store-exists', `${store.dir} exists: a session with this id was not finished (finishGitStore)`);
  }
  try {
    const owner = options.owner ?? agentOwner();
    const snapshot = hostRefsSnapshot({ gitDir: store.gitDir });
    const worktreeDir = store.ownGitDir ?? store.gitDir;
    const branch = branchOf(readPlainBounded(`${worktreeDir}/HEAD`, 4096));
    makeCommon(store, snapshot.text, owner);
    if (store.kind === 'common') makeOwn(store, owner);
    const copied = copyWorktreeFiles(worktreeDir, `${store.dir}/${store.kind === 'common' ? 'own' : 'common'}`, store.copies, owner);
    writeFileSync(`${store.dir}/${snapshotName}`, snapshot.text, { mode: 0o600, flag: 'wx' });
    const refs = new Map<string, string>();
    parsePackedRefs(snapshot.text, refs);
    const startTip = branch ? (refs.get(branch) ?? null) : null;
    const copyLimitBytes = Math.min(maxCopyBytes, options.diskBytes ?? maxCopyBytes);
    const manifest: StoreManifest = {
      version: 2,
      store,
      sessionId,
      branch,
      startTip,
      refCount: snapshot.count,
      owner,
      copied,
      copyLimitBytes,
      ms: Math.round(performance.now() - began),
    };
    writeFileSync(`${store.dir}/${manifestName}`, `${JSON.stringify(manifest)}\n`, { mode: 0o600, flag: 'wx' });
    return manifest;
  } catch (err) {
    rmSync(store.dir, { recursive: true, force: true });
    throw err;
  }
}

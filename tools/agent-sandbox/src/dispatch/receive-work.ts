/**
 * The node's side of carrying work: the bundle that follows a request line is read (exactly
 * the announced bytes, within the node's cap), checked (sha256, a valid bundle holding only the
 * session's branch, every object indexed: work-bundle.ts) before anything else is touched,
 * then fetched into the per-user mirror <root>/mirrors/<name>.git, whose linked worktree
 * <root>/workspaces/<id> the session runs in. After the session, the commits it added come
 * back as <root>/outgoing/<id>.bundle (sent by the forced command's second request kind,
 * serve-return.ts); uncommitted work stays in the node's worktree and is named in the verdict.
 * The session itself wrote its own git store: the launcher on the node brought its branch into
 * the mirror through the same checked import a local session goes through (fast-forward, or
 * aside at refs/agent-sandbox/returned/<id> when rewritten: that history then goes back whole,
 * and the client keeps it aside too).
 */
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { ToolError } from '@agent-sandbox/shared';
import type { BundleFacts, WorkOffer, WorkTransfer } from '@agent-sandbox/shared/schemas/workspace';
import { chownTree, grantWorkspace } from '../git/grant.js';
import { runGit, uncommittedPaths, type GitPlace } from '@agent-sandbox/shared/git-run';
import { layoutFor, type SessionLayout } from '../workspace/layout.js';
import { buildReader } from '@agent-sandbox/mount-plan';
import { checkBundle, fetchBundle, makeBundle } from './work-bundle.js';
import { gitPlaceOf } from '../workspace/list.js';
import { writeWorkspaceRecord } from '../workspace/record.js';

export interface ByteSource {
  /** Reads exactly n bytes (fewer only at end of file) into `write`; returns how many came. */
  readInto(n: number, write: (chunk: Buffer) => void): Promise<number>;
}

export interface AcceptedWork {
  layout: SessionLayout;
  mirror: string;
  place: GitPlace;
  offer: WorkOffer;
  transfer: WorkTransfer;
}

const mkdirOwn = (dir: string) => mkdirSync(dir, { recursive: true, mode: 0o700 });

/** Reads the announced bytes into <root>/incoming/<id>.bundle; refuses (80) a short or altered one. */
async function receiveBundle(source: ByteSource, offer: WorkOffer, file: string): Promise<BundleFacts> {
  const began = performance.now();
  const part = `${file}.part`;
  rmSync(part, { force: true });
  const fd = openSync(part, 'wx', 0o600);
  const hash = createHash('sha256');
  let got: number;
  try {
    got = await source.readInto(offer.bytes, (chunk) => {
      hash.update(chunk);
      writeSync(fd, chunk);
    });
  } finally {
    closeSync(fd);
  }
  if (got !== offer.bytes) {
    rmSync(part, { force: true });
    throw new ToolError('usage', 'bundle-truncated', `the bundle announced ${offer.bytes} bytes and the connection ended after ${got}`);
  }
  const sha256 = hash.digest('hex');
  if (sha256 !== offer.sha256) {
    rmSync(part, { force: true });
    throw new ToolError('usage', 'bundle-checksum', `the bundle's sha256 is ${sha256}, the request announced ${offer.sha256}`);
  }
  renameSync(part, file);
  return { bytes: got, sha256, tip: offer.tip, base: null, ms: Math.round(performance.now() - began) };
}

/** The mirror for this offer, made bare when missing (the session writes its own store, never the mirror). */
function ensureMirror(root: string, name: string): string {
  const mirrors = path.join(root, 'mirrors');
  mkdirSync(mirrors, { recursive: true, mode: 0o755 });
  const mirror = path.join(mirrors, `${name}.git`);
  if (!existsSync(mirror)) {
    runGit({}, ['init', '--quiet', '--bare', mirror], {}, { exit: 'internal' });
  }
  return mirror;
}

/** The node's worktree on the offered branch at the offered tip: made, or moved there keeping what was left uncommitted. */
async function placeWorktree(
  layout: SessionLayout,
  mirror: string,
  offer: WorkOffer,
  euid: number,
): Promise<{ place: GitPlace; worktree: 'created' | 'updated' }> {
  const incoming = `refs/incoming/${layout.sessionId}`;
  if (!existsSync(layout.workspace)) {
    runGit({ gitDir: mirror }, ['worktree', 'prune']);
    runGit({ gitDir: mirror }, ['update-ref', offer.branch, offer.tip]);
    runGit(
      { gitDir: mirror },
      ['worktree', 'add', '--quiet', layout.workspace, offer.branch.replace(/^refs\/heads\//, '')],
      {},
      { code: 'worktree-add-failed' },
    );
    const place = await gitPlaceOf(layout.workspace, layout.sessionId);
    if (!place?.commonDir)
      throw new ToolError(
        'internal',
        'worktree-not-linked',
        `${layout.workspace} is not a linked worktree of ${mirror} after git worktree add`,
      );
    grantWorkspace({ workTree: layout.workspace, registration: place.gitDir, commonDir: mirror }, euid);
    return { place, worktree: 'created' };
  }
  const place = await gitPlaceOf(layout.workspace, layout.sessionId);
  if (place?.commonDir !== mirror) {
    throw new ToolError(
      'gitMount',
      'node-workspace-not-mirror',
      `${layout.workspace} exists on this node and is not a worktree of ${mirror}; remove it (agent-sandbox workspace rm ${layout.sessionId} on the node) or dispatch another workspace id`,
    );
  }
  const head = runGit(place, ['symbolic-ref', '--quiet', 'HEAD'], { allowFail: true }).stdout.trim();
  if (head !== offer.branch) {
    throw new ToolError(
      'usage',
      'node-workspace-branch',
      `the node's worktree ${layout.workspace} has ${head || 'a detached HEAD'} checked out, not ${offer.branch}`,
    );
  }
  // --keep: what the last session left uncommitted stays, unless the new tip changes the same files (then refused).
  runGit(place, ['reset', '--quiet', '--keep', incoming], {}, { code: 'node-workspace-conflict' });
  if (euid === 0) {
    chownTree(layout.workspace);
    chownTree(place.gitDir);
  }
  return { place, worktree: 'updated' };
}

/**
 * Receives, checks and applies the offered bundle under the workspace's lock (held by the
 * caller). A refusal leaves the mirror as it was: nothing reaches it before the check passed.
 */
export async function acceptWork(
  source: ByteSource,
  offer: WorkOffer,
  root: string,
  workspaceId: string,
  maxBytes: number,
  euid = process.geteuid?.() ?? 0,
): Promise<AcceptedWork> {
  if (offer.bytes > maxBytes) {
    throw new ToolError(
      'usage',
      'bundle-too-large',
      `the bundle is ${offer.bytes} bytes; this node takes at most ${maxBytes} (receive --bundle-max)`,
    );
  }
  const layout = layoutFor(root, workspaceId);
  const incomingDir = path.join(root, 'incoming');
  mkdirOwn(incomingDir);
  const file = path.join(incomingDir, `${workspaceId}.bundle`);
  try {
    const received = await receiveBundle(source, offer, file);
    const checkBegan = performance.now();
    checkBundle({ file, ref: offer.branch, tip: offer.tip }, incomingDir);
    received.ms += Math.round(performance.now() - checkBegan);
    const applyBegan = performance.now();
    const mirror = ensureMirror(root, offer.mirror);
    fetchBundle({ gitDir: mirror }, file, offer.branch, `refs/incoming/${workspaceId}`);
    const { place, worktree } = await placeWorktree(layout, mirror, offer, euid);
    writeWorkspaceRecord(root, {
      version: 1,
      id: workspaceId,
      origin: 'dispatch',
      repository: mirror,
      commonDir: mirror,
      branch: offer.branch,
      base: offer.tip,
      createdAt: new Date().toISOString(),
      aclUids: [],
    });
    const transfer: WorkTransfer = {
      branch: offer.branch,
      received,
      applied: { worktree, ms: Math.round(performance.now() - applyBegan) },
      nodeWorkspace: layout.workspace,
    };
    return { layout, mirror, place, offer, transfer };
  } finally {
    rmSync(file, { force: true });
  }
}

export interface ReturnMeta {
  runId: string;
  ref: string;
  facts: BundleFacts;
}

export function outgoingFiles(root: string, id: string): { bundle: string; meta: string } {
  return { bundle: path.join(root, 'outgoing', `${id}.bundle`), meta: path.join(root, 'outgoing', `${id}.json`) };
}

/** A bundle of `branch` at `tip` (which may be a commit the mirror holds aside): made in a reader naming it so. */
async function bundleOf(
  mirror: string,
  branch: string,
  tip: string,
  file: string,
  base: string | undefined,
): Promise<BundleFacts | undefined> {
  const reader = `${file}.reader`;
  try {
    buildReader(reader, `${reader}.none`, path.join(mirror, 'objects'), branch, tip); // no objects of its own: the mirror's are borrowed
    return await makeBundle({ gitDir: reader }, branch, file, base);
  } finally {
    rmSync(reader, { recursive: true, force: true });
  }
}

/**
 * After the session: the commits it added (a bundle for the client to fetch) and what it left
 * uncommitted. `waiting` is the ref the session's commits wait at in the mirror, when its import
 * parked them (the verdict's gitReturn.sideRef): never another session's.
 */
export async function collectWork(accepted: AcceptedWork, runId: string | undefined, waiting?: string): Promise<WorkTransfer> {
  const { layout, mirror, offer } = accepted;
  const out = outgoingFiles(layout.root, layout.sessionId);
  mkdirOwn(path.dirname(out.bundle));
  rmSync(out.bundle, { force: true });
  rmSync(out.meta, { force: true });
  const paths = uncommittedPaths(accepted.place);
  const uncommitted = { count: paths.length, paths: paths.slice(0, 50) };
  const revision = (ref: string) =>
    runGit({ gitDir: mirror }, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { allowFail: true }).stdout.trim();
  const aside = waiting ? revision(waiting) : '';
  const tip = aside || revision(offer.branch);
  let returned: BundleFacts | null = null;
  let message: string | undefined;
  if (!tip) message = `${offer.branch} is gone from the node's mirror`;
  else if (tip !== offer.tip) {
    const ahead = runGit({ gitDir: mirror }, ['merge-base', '--is-ancestor', offer.tip, tip], { allowFail: true }).status === 0;
    returned = (await bundleOf(mirror, offer.branch, tip, out.bundle, ahead ? offer.tip : undefined)) ?? null;
    if (aside && waiting) runGit({ gitDir: mirror }, ['update-ref', '-d', waiting, aside], { allowFail: true });
    if (!returned) message = `${offer.branch} on the node is behind what was sent`;
  }
  if (returned && runId)
    writeFileSync(out.meta, `${JSON.stringify({ runId, ref: offer.branch, facts: returned } satisfies ReturnMeta)}\n`, { mode: 0o600 });
  if (uncommitted.count > 0)
    message = `${message ? `${message}; ` : ''}${uncommitted.count} uncommitted path${uncommitted.count === 1 ? '' : 's'} stay on the node in ${layout.workspace}`;
  return { ...accepted.transfer, returned, uncommitted, ...(message ? { message } : {}) };
}

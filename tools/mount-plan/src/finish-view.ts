/**
 * finishGitView: after the container is gone, undoes prepareGitView and reports what the
 * session left. Idempotent, and works from the view directory alone (view.json), so the sweep
 * of a dead launcher's session can call it too.
 *
 * - A full git dir (repo, submodule): HEAD, index and ORIG_HEAD are copied back from the shadow
 *   when the agent changed them, the host did not (else: `conflicts`, the host's copy is kept),
 *   and they look like what git writes (HEAD: a symref below refs/ or an object id; index: the
 *   DIRC signature, not split). Everything else the agent made at the git dir's top stays in the
 *   shadow and is deleted: `dropped` names it (an unfinished merge or rebase, a planted
 *   commondir or config).
 * - A linked worktree: its own gitdir is live, so any unfinished operation the agent left there
 *   is reported (`inProgress`): `git rebase --continue` on the host would run its todo list.
 * - Placeholders prepare created are removed when still empty (`removed`), else kept (`kept`).
 */
import * as nodeFs from 'node:fs/promises';
import { constants } from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import { manifestName, readPlain, sha256, type ViewManifest } from './prepare-view.js';

export interface FinishReport {
  /** The view directory did not exist: nothing to do. */
  absent: boolean;
  copiedBack: string[];
  conflicts: string[];
  invalid: string[];
  dropped: string[];
  inProgress: string[];
  removed: string[];
  kept: string[];
}

const headPattern = /^(ref: refs\/[^\0-\x20\x7f~^:?*[\\]+|[0-9a-f]{40}|[0-9a-f]{64})\n?$/;
const oidPattern = /^([0-9a-f]{40}|[0-9a-f]{64})\n?$/;

/** Names git makes at the top of a git dir that carry no state worth keeping. */
const privateNames = /^(gc\.pid|gc\.log|COMMIT_EDITMSG|FETCH_HEAD|rr-cache|lost-found|svn|.*\.lock|sharedindex\.[0-9a-f]+)$/;

const inProgressNames = ['rebase-merge', 'rebase-apply', 'sequencer', 'MERGE_HEAD', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'BISECT_START'];

function looksValid(name: string, data: Buffer, shadowNames: string[], copiedNames: Set<string>): boolean {
  if (name === 'HEAD') return data.length < 4096 && headPattern.test(data.toString('latin1'));
  if (name === 'ORIG_HEAD') return data.length < 4096 && oidPattern.test(data.toString('latin1'));
  if (name !== 'index') return false;
  const version = data.length >= 12 ? data.readUInt32BE(4) : 0;
  const splitAdded = shadowNames.some((n) => n.startsWith('sharedindex.') && !copiedNames.has(n));
  return data.subarray(0, 4).toString('latin1') === 'DIRC' && version >= 2 && version <= 4 && !splitAdded;
}

/** Writes `data` as `<dir>/<name>` the way git does: a temporary file renamed into place. */
async function replaceFile(dir: string, name: string, data: Buffer, owner: ViewManifest['owner']): Promise<void> {
  const tmp = `${dir}/${name}.agent-sandbox-${process.pid}.tmp`;
  await nodeFs.writeFile(tmp, data, { mode: 0o644, flag: 'wx' });
  if (process.getuid?.() === 0) await nodeFs.chown(tmp, owner.uid, owner.gid);
  await nodeFs.rename(tmp, `${dir}/${name}`);
}

async function copyBack(manifest: ViewManifest, report: FinishReport): Promise<void> {
  const { view } = manifest;
  const shadowNames = await nodeFs.readdir(view.shadow).catch(() => [] as string[]);
  const copiedNames = new Set(manifest.copied.map((c) => c.name));
  for (const copy of manifest.copied.filter((c) => view.copies.includes(c.name))) {
    let inside: Buffer | null;
    try {
      inside = await readPlain(`${view.shadow}/${copy.name}`);
    } catch {
      report.invalid.push(copy.name); // a symlink or a directory where git keeps a file
      continue;
    }
    if (inside === null || sha256(inside) === copy.sha256) continue; // removed or unchanged inside
    if (sha256(await readPlain(`${view.gitDir}/${copy.name}`)) !== copy.sha256) {
      report.conflicts.push(copy.name);
      continue;
    }
    if (!looksValid(copy.name, inside, shadowNames, copiedNames)) {
      report.invalid.push(copy.name);
      continue;
    }
    await replaceFile(view.gitDir, copy.name, inside, manifest.owner);
    report.copiedBack.push(copy.name);
  }
}

/** What the agent made at the top of the shadow (private; deleted with it), and links it replaced. */
async function reportDropped(manifest: ViewManifest, report: FinishReport): Promise<void> {
  const { view } = manifest;
  const shadowNames = await nodeFs.readdir(view.shadow).catch(() => [] as string[]);
  const expected = new Set([...view.links.map((l) => l.name), ...view.mountPoints, ...view.copies]);
  for (const name of shadowNames.sort()) {
    if (privateNames.test(name)) continue;
    if (expected.has(name)) {
      const link = view.links.find((l) => l.name === name);
      if (!link) continue;
      const target = await nodeFs.readlink(`${view.shadow}/${name}`).catch(() => undefined);
      if (target === link.target) continue; // else the agent replaced our symlink: dropped with the shadow
    }
    report.dropped.push(name);
  }
}

async function isEmpty(path: string): Promise<boolean> {
  const info = await nodeFs.lstat(path).catch(() => undefined);
  if (!info) return false;
  if (info.isFile()) return info.size === 0;
  if (info.isDirectory()) return (await nodeFs.readdir(path)).length === 0;
  return false;
}

async function removePlaceholders(manifest: ViewManifest, report: FinishReport): Promise<void> {
  for (const p of manifest.view.placeholders) {
    if (!p.removeAfter || !manifest.created.includes(p.path)) continue;
    if (!(await nodeFs.lstat(p.path).catch(() => undefined))) continue;
    if (await isEmpty(p.path)) {
      if (p.type === 'dir') await nodeFs.rmdir(p.path);
      else await nodeFs.unlink(p.path);
      report.removed.push(p.path);
    } else report.kept.push(p.path);
  }
}

async function readManifest(dir: string): Promise<ViewManifest | undefined> {
  let text: string;
  try {
    const handle = await nodeFs.open(`${dir}/${manifestName}`, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const manifest = JSON.parse(text) as ViewManifest;
  if (manifest.version !== 1 || manifest.view?.dir !== dir) {
    throw new ToolError('internal', 'git-view-manifest', `${dir}/${manifestName} is not a view manifest for this directory`);
  }
  return manifest;
}

/** Finishes the view in `dir` (`<root>/git-views/<id>`). Call only once the container is gone. */
export async function finishGitView(dir: string): Promise<FinishReport> {
  const report: FinishReport = { absent: false, copiedBack: [], conflicts: [], invalid: [], dropped: [], inProgress: [], removed: [], kept: [] };
  const manifest = await readManifest(dir);
  if (!manifest) {
    const exists = await nodeFs.lstat(dir).catch(() => undefined);
    if (!exists) return { ...report, absent: true };
    await nodeFs.rm(dir, { recursive: true, force: true }); // prepare died before its manifest: nothing was copied
    return report;
  }
  if (manifest.view.kind === 'full') await copyBack(manifest, report);
  await reportDropped(manifest, report);
  if (manifest.view.ownGitDir) {
    for (const name of inProgressNames) {
      if (await nodeFs.lstat(`${manifest.view.ownGitDir}/${name}`).catch(() => undefined)) report.inProgress.push(name);
    }
  }
  await removePlaceholders(manifest, report);
  // rm does not follow symlinks: the agent's links and files in the shadow are removed, never their targets.
  await nodeFs.rm(dir, { recursive: true, force: true });
  return report;
}

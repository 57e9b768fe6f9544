/**
 * Git repositories inside the workspace, below its top: what the host's git may enter from the
 * session's worktree with configuration the agent wrote. A `.git` directory or gitfile in a
 * subdirectory is found by git run in that subdirectory; with a gitlink in the index at that
 * path, a plain `git status` at the top recurses into it (measured: a nested repo's
 * core.fsmonitor ran on the host, no .gitmodules needed); a bare repository (HEAD, objects/,
 * refs/) is found by git run inside it. None of this can be closed by mounts: these paths lie
 * in the read-write workspace and a read-only mount deep inside moves with a renamed parent.
 *
 * So the launcher scans before and after the session and reports what is new or changed
 * (diffNestedGit). No symlink is followed; the workspace's own top-level `.git` is skipped.
 * Names are read as bytes and carried without loss (shared/byte-names): a directory named with
 * bytes that are not UTF-8 is walked like any other, so such a name hides no repository. Every
 * file system call gets the exact bytes back (`b()`).
 */
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs/promises';
import { fsPath, readdirNames, readdirTyped, type NamedEntry } from '@agent-sandbox/shared/byte-names';
import type { NestedGitChange } from '@agent-sandbox/shared/schemas/mount-plan';
import { walkBeneath } from '@agent-sandbox/shared/beneath';
import { hostRunSignature, isHostRunPath, type HostRunFile } from './host-run.js';

export interface NestedGit {
  /** Relative to the workspace. */
  path: string;
  type: 'gitdir' | 'gitfile' | 'symlink' | 'bare';
  /** Changes when what the host's git would read there changes. */
  signature: string;
}

/** `{path, change, type}` (schema: mount-plan NestedGitChange). */
export type { NestedGitChange };

export interface ScanOptions {
  /** Stop after this many directory entries (the result says so); default 2,000,000. */
  maxEntries?: number;
}

const maxRead = 1 << 20;

/** The path as the kernel has it (paths here are built from names read without loss). */
const b = fsPath;

/**
 * At most 1 MiB of a regular file. The session may still run while the first scan reads (it
 * overlaps the start), and may swap a file for a link or a FIFO between the listing and the
 * open: neither is followed (O_NOFOLLOW) nor waited on (O_NONBLOCK, then only a regular file).
 */
async function readBoundedOrEmpty(path: string): Promise<Buffer> {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = nodeFs.constants;
  const handle = await nodeFs.open(b(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(() => undefined);
  if (!handle) return Buffer.alloc(0);
  try {
    if (!(await handle.stat()).isFile()) return Buffer.alloc(0);
    const buffer = Buffer.alloc(maxRead);
    const { bytesRead } = await handle.read(buffer, 0, maxRead, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** What the host's git would take from a git dir: its config, commondir, worktree config, hooks. */
async function gitDirSignature(dir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const name of ['config', 'commondir', 'config.worktree', 'HEAD']) {
    const info = await nodeFs.lstat(b(`${dir}/${name}`)).catch(() => undefined);
    hash.update(`${name}\0${info?.isSymbolicLink() ? `link:${(await nodeFs.readlink(b(`${dir}/${name}`), 'buffer')).toString('hex')}` : ''}\0`);
    if (info?.isFile()) hash.update(await readBoundedOrEmpty(`${dir}/${name}`));
  }
  let hooks: string[] = [];
  try {
    hooks = readdirNames(`${dir}/hooks`);
  } catch {
    // no hooks directory
  }
  for (const hook of hooks.sort((x, y) => (x < y ? -1 : 1))) {
    const info = await nodeFs.lstat(b(`${dir}/hooks/${hook}`)).catch(() => undefined);
    hash.update(`hook\0${hook}\0${info?.size ?? 0}\0${info?.mtimeMs ?? 0}\0${info?.mode ?? 0}\0`);
  }
  return hash.digest('hex');
}

/** Synchronous: a workspace walk is tens of thousands of directories, each a thread-pool round trip otherwise. */
function listDir(dir: string): NamedEntry[] {
  try {
    return readdirTyped(dir);
  } catch {
    return [];
  }
}

export interface NestedScan {
  entries: NestedGit[];
  /** Files host tools run or read without being asked (host-run.ts), and nested repositories' hooks. */
  hostRun: HostRunFile[];
  /** The walk stopped at maxEntries: the list is incomplete. */
  truncated: boolean;
  visited: number;
}

/** The hooks of a nested git dir at `rel`: each one a file the host's git runs there. */
function hooksOf(workspace: string, rel: string, into: HostRunFile[]): void {
  // hooks/ must be a directory reached without a link: readdir would follow one out of the workspace.
  if (!walkBeneath(workspace, `${workspace}/${rel}/hooks`).stats?.isDirectory()) return;
  for (const hook of listDir(`${workspace}/${rel}/hooks`)) {
    const signature = hostRunSignature(`${workspace}/${rel}/hooks/${hook.name}`, hook);
    if (signature) into.push({ path: `${rel}/hooks/${hook.name}`, signature });
  }
}

/** Every nested repository below `workspace` (its top-level `.git` excluded), and the host-run files. */
export async function scanNestedGit(workspace: string, options: ScanOptions = {}): Promise<NestedScan> {
  const limit = options.maxEntries ?? 2_000_000;
  const entries: NestedGit[] = [];
  const hostRun: HostRunFile[] = [];
  const pending: string[] = [''];
  let visited = 0;
  while (pending.length > 0) {
    const rel = pending.pop() as string;
    const dir = rel === '' ? workspace : `${workspace}/${rel}`;
    const list = listDir(dir);
    visited += list.length;
    if (visited > limit) return { entries, hostRun, truncated: true, visited };
    const parts = rel === '' ? [] : rel.split('/');
    const names = new Set(list.map((d) => d.name));
    // Not below a .git (never entered): a directory git itself would take for a bare repository.
    if (rel !== '' && names.has('HEAD') && names.has('objects') && names.has('refs')) {
      entries.push({ path: rel, type: 'bare', signature: await gitDirSignature(dir) });
      hooksOf(workspace, rel, hostRun);
    }
    for (const entry of list) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      const child = `${workspace}/${childRel}`;
      if (entry.name === '.git') {
        if (rel === '') continue;
        if (entry.type.isSymbolicLink()) entries.push({ path: childRel, type: 'symlink', signature: (await nodeFs.readlink(b(child), 'buffer')).toString('hex') });
        else if (entry.type.isDirectory()) {
          entries.push({ path: childRel, type: 'gitdir', signature: await gitDirSignature(child) });
          hooksOf(workspace, childRel, hostRun);
        } else if (entry.type.isFile()) {
          entries.push({ path: childRel, type: 'gitfile', signature: createHash('sha256').update(await readBoundedOrEmpty(child)).digest('hex') });
        }
        continue;
      }
      if (entry.type.isDirectory()) pending.push(childRel);
      else if (isHostRunPath([...parts, entry.name])) {
        const signature = hostRunSignature(child, entry);
        if (signature) hostRun.push({ path: childRel, signature });
      }
    }
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { entries, hostRun, truncated: false, visited };
}

/** What is new, changed or gone between two scans. */
export function diffNestedGit(before: NestedScan, after: NestedScan): NestedGitChange[] {
  const old = new Map(before.entries.map((e) => [e.path, e]));
  const now = new Map(after.entries.map((e) => [e.path, e]));
  const out: NestedGitChange[] = [];
  for (const [path, entry] of now) {
    const was = old.get(path);
    if (!was) out.push({ path, change: 'added', type: entry.type });
    else if (was.type !== entry.type || was.signature !== entry.signature) out.push({ path, change: 'changed', type: entry.type });
  }
  for (const [path, entry] of old) if (!now.has(path)) out.push({ path, change: 'removed', type: entry.type });
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

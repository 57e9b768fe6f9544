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
 * file system call gets the exact bytes back (`fsPath`).
 */
import { createHash } from 'node:crypto';
import { lstatSync, readlinkSync } from 'node:fs';
import { fsPath, readdirTyped, type NamedEntry } from '@agent-sandbox/shared/byte-names';
import type { NestedGitChange } from '@agent-sandbox/shared/schemas/mount-plan';
import { readBeneath, walkBeneath } from '@agent-sandbox/shared/beneath';
import { hostRunSignature, isHostRunPath, specialSignature, type HostRunFile } from './host-run.js';
import { specialKind } from '../store/bounded-read.js';

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
/** The most FIFOs, sockets and device nodes a scan lists (a session could make millions). */
export const maxSpecial = 10_000;

/**
 * What is at `target` (beneath `workspace`) for a signature, following no link: the bytes of a
 * regular file (bounded), a link's own target, or nothing. A planted `config -> /etc/...` is
 * its link text, never the host file's contents.
 */
function readForSignature(workspace: string, target: string): string | Buffer {
  const read = readBeneath(workspace, target, maxRead);
  if (read.plantedLink) return `link:${read.plantedLink === target ? readlinkOrEmpty(target) : `on the way at ${read.plantedLink}`}`;
  return read.data ?? '';
}

/** A link's own target, as hex of its bytes (it may not be UTF-8). */
function readlinkOrEmpty(p: string): string {
  try {
    return readlinkSync(fsPath(p), 'buffer').toString('hex');
  } catch {
    return '';
  }
}

/**
 * What the host's git would take from a git dir: its config, commondir, worktree config, HEAD,
 * hooks. Every read resolves beneath the workspace without following a link (beneath.ts): a
 * `hooks -> /home/<user>/...` the agent planted is signed as that link, and the host directory
 * it names is never listed.
 */
function gitDirSignature(workspace: string, dir: string): string {
  const hash = createHash('sha256');
  for (const name of ['config', 'commondir', 'config.worktree', 'HEAD']) {
    hash.update(`${name}\0`);
    hash.update(readForSignature(workspace, `${dir}/${name}`));
    hash.update('\0');
  }
  const hooks = walkBeneath(workspace, `${dir}/hooks`);
  if (hooks.link) hash.update(`hooks\0link:${hooks.link === `${dir}/hooks` ? readlinkOrEmpty(hooks.link) : hooks.link}\0`);
  else if (hooks.stats?.isDirectory()) {
    for (const hook of listDir(`${dir}/hooks`).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const info = lstatSync(fsPath(`${dir}/hooks/${hook.name}`), { throwIfNoEntry: false });
      hash.update(`hook\0${hook.name}\0${info?.size ?? 0}\0${info?.mtimeMs ?? 0}\0${info?.mode ?? 0}\0`);
    }
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
  /** FIFOs, sockets and device nodes (relative paths, at most `maxSpecial`): git blocks on a FIFO where it opens a file, and no user tool expects one in a worktree. */
  special: string[];
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
  const special: string[] = [];
  const pending: string[] = [''];
  let visited = 0;
  while (pending.length > 0) {
    const rel = pending.pop() as string;
    const dir = rel === '' ? workspace : `${workspace}/${rel}`;
    const list = listDir(dir);
    visited += list.length;
    if (visited > limit) return { entries, hostRun, special, truncated: true, visited };
    const parts = rel === '' ? [] : rel.split('/');
    const names = new Set(list.map((d) => d.name));
    // Not below a .git (never entered): a directory git itself would take for a bare repository.
    if (rel !== '' && names.has('HEAD') && names.has('objects') && names.has('refs')) {
      entries.push({ path: rel, type: 'bare', signature: gitDirSignature(workspace, dir) });
      hooksOf(workspace, rel, hostRun);
    }
    for (const entry of list) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      const child = `${workspace}/${childRel}`;
      const isSpecial = specialKind(entry.type) !== undefined;
      if (entry.name === '.git') {
        if (rel === '') continue;
        // A FIFO or device as a nested .git is no repository to git, but it is one more thing the
        // quarantine moves out (git or an editor that opened it would wait for a writer).
        if (isSpecial && special.length < maxSpecial) special.push(childRel);
        if (entry.type.isSymbolicLink()) entries.push({ path: childRel, type: 'symlink', signature: readlinkOrEmpty(child) });
        else if (entry.type.isDirectory()) {
          entries.push({ path: childRel, type: 'gitdir', signature: gitDirSignature(workspace, child) });
          hooksOf(workspace, childRel, hostRun);
        } else if (entry.type.isFile()) {
          entries.push({
            path: childRel,
            type: 'gitfile',
            signature: createHash('sha256').update(readForSignature(workspace, child)).digest('hex'),
          });
        }
        continue;
      }
      if (entry.type.isDirectory()) pending.push(childRel);
      else if (isSpecial) {
        if (special.length < maxSpecial) special.push(childRel);
        // A FIFO named Makefile or package.json stops make or npm when the user runs them: reported as a host-run file too.
        if (isHostRunPath([...parts, entry.name])) hostRun.push({ path: childRel, signature: specialSignature(entry) });
      } else if (isHostRunPath([...parts, entry.name])) {
        const signature = hostRunSignature(child, entry);
        if (signature) hostRun.push({ path: childRel, signature });
      }
    }
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { entries, hostRun, special, truncated: false, visited };
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

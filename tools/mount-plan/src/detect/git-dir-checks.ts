/**
 * The checks detect-git.ts makes on the paths it is about to mount: that a git dir is where it
 * says (canonical, no symlink on the way) and that each entry a bind mount would follow is a
 * plain directory or file. Each refusal exits 87 with a code naming the case.
 */
import * as nodeFs from 'node:fs/promises';
import { ToolError, type CodeOf } from '@agent-sandbox/shared';
import { isLexicallyCanonical } from './container-paths.js';

/** A refusal to mount the workspace's git metadata: exit 87, with the case's code. */
export function refuse(code: CodeOf<'gitMount'>, message: string, detail?: Record<string, unknown>): ToolError {
  return new ToolError('gitMount', code, message, detail);
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** The entry's lstat, or undefined when nothing is there (or a parent is not a directory). */
export async function lstatOrUndefined(p: string) {
  try {
    return await nodeFs.lstat(p);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return undefined;
    throw err;
  }
}

export async function isDir(p: string): Promise<boolean> {
  const info = await lstatOrUndefined(p);
  return info?.isDirectory() ?? false;
}

/** Refuses unless `p` is absolute, lexically canonical and its own realpath (no symlink anywhere). */
const notFound: Record<'gitdir-not-canonical' | 'commondir-not-canonical', CodeOf<'gitMount'>> = {
  'gitdir-not-canonical': 'gitdir-not-found',
  'commondir-not-canonical': 'commondir-not-found',
};

export async function requireCanonical(p: string, code: keyof typeof notFound, what: string): Promise<void> {
  if (!isLexicallyCanonical(p)) throw refuse(code, `${what} ${p} is not a canonical absolute path`);
  let real: string;
  try {
    real = await nodeFs.realpath(p);
  } catch (err) {
    throw refuse(notFound[code], `${what} ${p} does not exist (${errnoOf(err) ?? err})`);
  }
  if (real !== p) {
    throw refuse(code, `${what} ${p} resolves through a symlink to ${real}; git inside the container would not find it`);
  }
}

/** Refuses unless `dir` holds each of `needs` (objects, refs, ...): without them it is no git dir. */
export async function requireRepositoryDirs(dir: string, needs: string[], code: CodeOf<'gitMount'>, what: string): Promise<void> {
  for (const name of needs) {
    if (!(await lstatOrUndefined(`${dir}/${name}`))) throw refuse(code, `${what} ${dir} has no ${name}: not a git directory`);
  }
}

/**
 * Refuses unless each named entry of `dir` is absent (when allowed) or of the given type
 * and not a symlink: these become bind sources or are copied, and a bind follows symlinks.
 */
export async function requirePlainEntries(dir: string, entries: [string, 'dir' | 'file', 'required' | 'optional'][]): Promise<void> {
  for (const [name, type, need] of entries) {
    const path = `${dir}/${name}`;
    const info = await lstatOrUndefined(path);
    if (!info) {
      if (need === 'required') throw refuse('git-entry-missing', `${path} does not exist; the git dir is incomplete`);
      continue;
    }
    if (type === 'dir' ? !info.isDirectory() : !info.isFile()) {
      throw refuse(
        'git-entry-not-plain',
        `${path} is not a plain ${type === 'dir' ? 'directory' : 'file'} (a symlink?); it would be mounted or copied`,
        { path },
      );
    }
  }
}

/** The entries of a git dir (or common dir) that the view mounts or copies. */
export async function checkGitDirEntries(dir: string, full: boolean): Promise<{ hasRegistry: boolean; hasModules: boolean }> {
  await requirePlainEntries(dir, [
    ['objects', 'dir', 'required'],
    ['refs', 'dir', 'required'],
    ['logs', 'dir', 'optional'],
    ['worktrees', 'dir', 'optional'],
    ['modules', 'dir', 'optional'],
    ...(full
      ? ([
          ['HEAD', 'file', 'required'],
          ['index', 'file', 'optional'],
          ['ORIG_HEAD', 'file', 'optional'],
        ] as const)
      : []),
  ] as [string, 'dir' | 'file', 'required' | 'optional'][]);
  return { hasRegistry: await isDir(`${dir}/worktrees`), hasModules: await isDir(`${dir}/modules`) };
}

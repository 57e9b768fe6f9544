/**
 * What kind of git checkout the workspace is, and where its git metadata lies
 * (store/git-store.ts and plan-mounts.ts turn that into mounts).
 *
 * - none: no `.git` at the workspace's top.
 * - repo: `.git` is a directory inside the workspace.
 * - worktree: `.git` is a gitfile naming `<common>/worktrees/<name>`, whose
 *   `commondir` names the common dir. The registration `<gitdir>/gitdir` names the
 *   worktree's host path; the workspace is mounted there too (hostPathAlias) so
 *   the registration resolves and `git worktree prune` keeps it.
 * - submodule: `.git` is a gitfile naming a full git dir (no `commondir`): a
 *   submodule's `modules/<name>` or a `--separate-git-dir`. Its `core.worktree`,
 *   when set, must name this workspace, which is then also mounted at that host path.
 *
 * Every entry that becomes a bind source must be a plain directory or file, never a
 * symlink: a planted `.git/refs -> ~/.ssh` would otherwise be mounted read-write.
 * Every refusal exits 87 with a code naming the case.
 */
import * as nodeFs from 'node:fs/promises';
import * as nodePath from 'node:path';
import { captureCommand } from '@agent-sandbox/shared/capture';
import type { GitKind } from '@agent-sandbox/shared/schemas/mount-plan';
import { isLexicallyCanonical, isWithin } from './container-paths.js';
import {
  checkGitDirEntries,
  isDir,
  lstatOrUndefined,
  refuse,
  requireCanonical,
  requirePlainEntries,
  requireRepositoryDirs,
} from './git-dir-checks.js';
import { readGitLink, readPathFile } from './git-link.js';

export interface GitDetection {
  kind: GitKind;
  gitDir?: string;
  commonDir?: string;
  worktreeName?: string;
  /** The workspace's host path that git metadata names; mounted as a second view of the workspace. */
  hostPathAlias?: string;
  /** `<gitDir or commonDir>/worktrees` exists: other worktrees' registrations, mounted read-only. */
  hasRegistry: boolean;
  /** `<gitDir or commonDir>/modules` exists: submodule git dirs, mounted read-only. */
  hasModules: boolean;
}

/** Reads one value from a git config file; undefined when unset. */
export type ReadConfigValue = (file: string, key: string) => Promise<string | undefined>;

export interface DetectOptions {
  /** The workspace's host realpath. */
  workspace: string;
  /** Where the workspace appears inside the container. */
  containerWorkspace: string;
  readConfigValue?: ReadConfigValue;
}

/** The default config reader: real git, reading only that one file. */
export const gitConfigValue: ReadConfigValue = async (file, key) => {
  const result = await captureCommand('git', ['config', '--file', file, '--get', key], {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1' },
    timeoutMs: 10_000,
  });
  if (result.exitCode === 0) return result.stdout;
  if (result.exitCode === 1) return undefined;
  const why = result.spawnError?.includes('ENOENT') ? 'git is not installed' : (result.spawnError ?? result.stderr.trim());
  throw refuse('git-config-unreadable', `cannot read ${key} from ${file}: ${why}`);
};

/** Resolves the gitfile's target; refuses relative targets (they resolve elsewhere inside). */
async function resolveGitDir(workspace: string, containerWs: string, target: string, relative: boolean): Promise<string> {
  if (relative) {
    const host = nodePath.resolve(workspace, target);
    const inside = nodePath.resolve(containerWs, target);
    throw refuse(
      'relative-gitdir-unresolvable',
      `the workspace's .git names a relative gitdir "${target}": on the host that is ${host}, inside the container ${inside}; ` +
        'write it as an absolute path (git worktree repair) so it can be mounted at the same path',
      { target },
    );
  }
  await requireCanonical(target, 'gitdir-not-canonical', 'gitdir');
  if (isWithin(target, workspace)) {
    throw refuse('git-metadata-inside-workspace', `gitdir ${target} lies inside the workspace; only a .git directory may`);
  }
  return target;
}

/** A linked worktree: common dir, registry, registration. */
async function detectWorktree(workspace: string, gitDir: string): Promise<GitDetection> {
  const named = await readPathFile(`${gitDir}/commondir`, 'commondir');
  const commonDir = named.startsWith('/') ? named : nodePath.resolve(gitDir, named);
  await requireCanonical(commonDir, 'commondir-not-canonical', 'common dir');
  await requireRepositoryDirs(commonDir, ['objects', 'refs'], 'commondir-not-a-repository', 'common dir');
  if (isWithin(commonDir, workspace)) {
    throw refuse('git-metadata-inside-workspace', `common dir ${commonDir} lies inside the workspace ${workspace}`);
  }
  // A common dir containing the workspace is refused by planMounts (it contains the root or another session).
  const registry = `${commonDir}/worktrees`;
  const worktreeName = nodePath.basename(gitDir);
  if (nodePath.dirname(gitDir) !== registry) {
    throw refuse('gitdir-outside-commondir', `gitdir ${gitDir} is not ${registry}/<name>; its registration cannot be protected`);
  }
  const registered = await readPathFile(`${gitDir}/gitdir`, 'worktree registration');
  const alias = nodePath.dirname(registered);
  if (!isLexicallyCanonical(registered) || nodePath.basename(registered) !== '.git') {
    throw refuse('worktree-registration-mismatch', `worktree registration ${gitDir}/gitdir names ${registered}, not <worktree>/.git`);
  }
  let aliasReal: string | undefined;
  try {
    aliasReal = await nodeFs.realpath(alias);
  } catch {
    aliasReal = undefined;
  }
  if (aliasReal !== workspace || alias !== workspace) {
    throw refuse(
      'worktree-registration-mismatch',
      `worktree registration ${gitDir}/gitdir names ${registered}, not this workspace ${workspace}/.git (run git worktree repair)`,
      { registered },
    );
  }
  await requirePlainEntries(gitDir, [
    ['commondir', 'file', 'required'],
    ['gitdir', 'file', 'required'],
    ['config.worktree', 'file', 'optional'],
    ['modules', 'dir', 'optional'],
  ]);
  const entries = await checkGitDirEntries(commonDir, false);
  return { kind: 'worktree', gitDir, commonDir, worktreeName, hostPathAlias: workspace, ...entries };
}

/** A gitfile naming a full git dir: a submodule or a separate git dir. */
async function detectSubmodule(workspace: string, gitDir: string, read: ReadConfigValue): Promise<GitDetection> {
  await requireRepositoryDirs(gitDir, ['objects', 'refs'], 'gitdir-not-a-repository', 'gitdir');
  const entries = await checkGitDirEntries(gitDir, true);
  const configured = await read(`${gitDir}/config`, 'core.worktree');
  let hostPathAlias: string | undefined;
  if (configured !== undefined) {
    const named = nodePath.resolve(gitDir, configured);
    let real: string | undefined;
    try {
      real = await nodeFs.realpath(named);
    } catch {
      real = undefined;
    }
    if (real !== workspace || named !== workspace) {
      throw refuse('submodule-worktree-mismatch', `core.worktree of ${gitDir} names ${named}, not this workspace ${workspace}`, {
        coreWorktree: configured,
      });
    }
    hostPathAlias = workspace;
  }
  return { kind: 'submodule', gitDir, commonDir: gitDir, ...(hostPathAlias ? { hostPathAlias } : {}), ...entries };
}

/** The detection; throws a ToolError (87) for anything that would leave git broken inside. */
export async function detectGit(options: DetectOptions): Promise<GitDetection> {
  const { workspace, containerWorkspace } = options;
  const dotgit = `${workspace}/.git`;
  const info = await lstatOrUndefined(dotgit);
  if (!info) return { kind: 'none', hasRegistry: false, hasModules: false };
  if (info.isSymbolicLink()) throw refuse('dotgit-symlink', `${dotgit} is a symlink; git inside the container would not follow it`);
  if (info.isDirectory()) {
    if (await lstatOrUndefined(`${dotgit}/commondir`)) {
      throw refuse('dotgit-commondir', `${dotgit} is a directory with a commondir file; not supported`);
    }
    await requireRepositoryDirs(dotgit, ['HEAD', 'objects', 'refs'], 'gitdir-not-a-repository', 'git dir');
    return { kind: 'repo', gitDir: dotgit, commonDir: dotgit, ...(await checkGitDirEntries(dotgit, true)) };
  }
  if (!info.isFile()) throw refuse('dotgit-not-a-file', `${dotgit} is neither a directory nor a regular file`);
  const link = await readGitLink(dotgit);
  const gitDir = await resolveGitDir(workspace, containerWorkspace, link.target, link.relative);
  await requireRepositoryDirs(gitDir, ['HEAD'], 'gitdir-not-a-repository', 'gitdir');
  if (await lstatOrUndefined(`${gitDir}/commondir`)) return detectWorktree(workspace, gitDir);
  return detectSubmodule(workspace, gitDir, options.readConfigValue ?? gitConfigValue);
}

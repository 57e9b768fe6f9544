/**
 * The one way the launcher runs git on the host. A session's agent could have written into
 * the git metadata it had mounted (refs, objects, its worktree's registration, the worktree's
 * `.git` file), so git here never discovers a repository through the worktree: the git dir,
 * the common dir and the work tree are named explicitly (GIT_DIR, GIT_COMMON_DIR overrides the
 * registration's `commondir` file, GIT_WORK_TREE), hooks and fsmonitor are off in command
 * scope, safe.directory names exact paths (never "*"), and the environment is fixed (no
 * global configuration, no prompt).
 */
import { spawnSync } from 'node:child_process';
import { ToolError, type ErrorCode, type ExitOf } from './tool-error.js';
import { systemPath } from './podman-pin.js';

export interface GitPlace {
  /** The git dir: a bare repository, a common dir, or a worktree's registration. */
  gitDir: string;
  /** The common dir, when gitDir is a linked worktree's registration. */
  commonDir?: string;
  workTree?: string;
}

export interface GitResult {
  status: number;
  stdout: string;
  stderr: string;
  /** The signal that ended git (a timeout's SIGTERM, the OOM killer's SIGKILL); status is then 1. */
  signal?: NodeJS.Signals;
}

export interface GitOptions {
  /** Extra `-c key=value` settings. */
  config?: string[];
  input?: string | Buffer;
  timeoutMs?: number;
  /** Return the result on a non-zero status instead of throwing. */
  allowFail?: boolean;
  /** Variables added to the fixed environment (GIT_INDEX_FILE for an index the launcher checks). */
  env?: Record<string, string>;
}

/** Command-scope settings that keep code from the repository's metadata from running here. */
export function hardening(place: Partial<GitPlace>): string[] {
  const safe = [place.workTree, place.gitDir, place.commonDir].filter((p): p is string => Boolean(p));
  return [
    '-c',
    'core.hooksPath=/dev/null',
    '-c',
    'core.fsmonitor=false',
    '-c',
    'core.sshCommand=false',
    '-c',
    'protocol.allow=never',
    '-c',
    'protocol.file.allow=always',
    ...safe.flatMap((p) => ['-c', `safe.directory=${p}`]),
  ];
}

function gitEnv(place: Partial<GitPlace>): NodeJS.ProcessEnv {
  return {
    PATH: systemPath,
    HOME: '/nonexistent',
    LANG: 'C',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    // Reflog entries the launcher writes name it, not whoever's identity a config would give.
    GIT_COMMITTER_NAME: 'agent-sandbox',
    GIT_COMMITTER_EMAIL: 'agent-sandbox@localhost',
    GIT_AUTHOR_NAME: 'agent-sandbox',
    GIT_AUTHOR_EMAIL: 'agent-sandbox@localhost',
    ...(place.gitDir ? { GIT_DIR: place.gitDir } : {}),
    ...(place.commonDir ? { GIT_COMMON_DIR: place.commonDir } : {}),
    ...(place.workTree ? { GIT_WORK_TREE: place.workTree } : {}),
  };
}

/** How a failing git is refused: a code (default git-failed) and its exit, which may be left out when the code has usage (80). */
export type GitFailure<C extends ErrorCode> = { code?: C } & ('usage' extends ExitOf<C> ? { exit?: ExitOf<C> } : { exit: ExitOf<C> });

/**
 * Runs git in `place` (or, for a repository the user named, discovering it from `cwd`).
 * A failure is refused with git's own last line, as `failAs` says (default usage, 80, git-failed).
 */
export function runGit<C extends ErrorCode = 'git-failed'>(
  place: Partial<GitPlace> & { cwd?: string },
  args: string[],
  options: GitOptions = {},
  failAs: GitFailure<C> = {} as GitFailure<C>,
): GitResult {
  const out = spawnSync('git', [...hardening(place), ...(options.config ?? []).flatMap((c) => ['-c', c]), ...args], {
    cwd: place.cwd ?? '/',
    env: { ...gitEnv(place), ...options.env },
    input: options.input,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    timeout: options.timeoutMs ?? 120_000,
  });
  // A timeout is git's end, not a failure to start it: its result says the signal that ended it.
  const timedOut = (out.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
  if (out.error && !timedOut) {
    throw new ToolError(
      'startFailed',
      'git-failed',
      `cannot run git ${args[0] ?? ''}: ${out.error.message}${(out.error as NodeJS.ErrnoException).code === 'ENOENT' ? ' (install git)' : ''}`,
    );
  }
  const signal = out.signal ?? (timedOut ? 'SIGTERM' : null);
  const result: GitResult = { status: out.status ?? 1, stdout: out.stdout ?? '', stderr: out.stderr ?? '', ...(signal ? { signal } : {}) };
  if (result.status !== 0 && !options.allowFail) {
    const why = result.stderr.trim().split('\n').filter(Boolean).pop() ?? `exit ${result.status}`;
    const [exit, code] = [(failAs.exit ?? 'usage') as ExitOf<C>, (failAs.code ?? 'git-failed') as C];
    throw new ToolError(
      exit,
      code,
      `git ${args
        .filter((a) => !a.startsWith('-'))
        .slice(0, 2)
        .join(' ')}: ${why}`,
    );
  }
  return result;
}

/** The first line of git's output, trimmed. */
export function gitLine<C extends ErrorCode = 'git-failed'>(
  place: Partial<GitPlace> & { cwd?: string },
  args: string[],
  failAs?: GitFailure<C>,
): string {
  return runGit(place, args, {}, failAs).stdout.split('\n')[0]!.trim();
}

/**
 * How long the launcher's own git status in a workspace may take. A session can leave a FIFO
 * where git opens a file (.gitignore, .gitattributes at any level): git then blocks on the open
 * until killed. The launcher's status gives up after this and says why; the user's own git there
 * is made safe by the quarantine after the session, not by this bound.
 */
export const statusTimeoutMs = 10_000;

/** Paths git status lists for a worktree (porcelain v1, NUL-separated: names are exact); refused when git does not answer within statusTimeoutMs. */
export function uncommittedPaths(place: GitPlace): string[] {
  // No untracked cache (written into the index) and no fsmonitor (hardening): a status that only reads.
  const out = runGit(place, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignore-submodules=none'], {
    config: ['core.untrackedCache=false'],
    timeoutMs: statusTimeoutMs,
    allowFail: true,
  });
  if (out.signal) {
    throw new ToolError(
      'usage',
      'git-failed',
      `git status in ${place.workTree ?? place.gitDir} did not answer within ${statusTimeoutMs / 1000} s (a FIFO where git opens a file, such as .gitignore, blocks it); look with ls -la, or use --force`,
    );
  }
  if (out.status !== 0)
    throw new ToolError(
      'usage',
      'git-failed',
      `git status: ${out.stderr.trim().split('\n').filter(Boolean).pop() ?? `exit ${out.status}`}`,
    );
  const paths: string[] = [];
  const fields = out.stdout.split('\0').filter(Boolean);
  for (let i = 0; i < fields.length; i += 1) {
    const entry = fields[i]!;
    paths.push(entry.slice(3));
    if (entry[0] === 'R' || entry[0] === 'C') i += 1; // the rename's source follows
  }
  return paths;
}

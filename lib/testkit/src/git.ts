/**
 * git run on the host the way a user would, for tests: a fixed identity, no user or system
 * configuration, and a plain PATH, so a test's git does not depend on the machine's. The
 * launcher's own git is lib/shared/src/git-run.ts; this one is the user's.
 */
import { execa } from 'execa';

export const testGitEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/nonexistent',
  LANG: 'C',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@sandbox.invalid',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@sandbox.invalid',
};

export interface TestGitOptions {
  /** Variables over testGitEnv (HOME for a user's own configuration, an identity). */
  env?: Record<string, string>;
  /** Run as this uid and gid (setpriv), as the host user whose repository it is. */
  asUid?: number;
  timeoutMs?: number;
}

export interface TestGitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** git in `cwd` (safe.directory for it alone); the result whatever the status. */
export async function runTestGit(cwd: string, args: string[], options: TestGitOptions = {}): Promise<TestGitResult> {
  const gitArgs = ['-c', `safe.directory=*`, '-C', cwd, ...args];
  const [file, argv] =
    options.asUid === undefined
      ? ['git', gitArgs]
      : ['setpriv', ['--reuid', String(options.asUid), '--regid', String(options.asUid), '--clear-groups', '--', 'git', ...gitArgs]];
  const out = await execa(file, argv, {
    env: { ...testGitEnv, ...options.env },
    extendEnv: false,
    reject: false,
    timeout: options.timeoutMs ?? 120_000,
  });
  return { exitCode: out.exitCode ?? -1, stdout: String(out.stdout), stderr: String(out.stderr) };
}

/** git in `cwd`; its trimmed stdout, or an error naming the command and git's complaint. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await runTestGit(cwd, args);
  if (out.exitCode !== 0)
    throw new Error(`git ${args.join(' ')} in ${cwd}: exit ${out.exitCode}: ${out.stderr.trim().split('\n').pop() ?? ''}`);
  return out.stdout.trim();
}

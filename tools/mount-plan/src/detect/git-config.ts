/**
 * Git configuration the container gets (command scope, through GIT_CONFIG_COUNT),
 * never written into the host's repository.
 *
 * - safe.directory for the workspace as git sees it inside (and its host-path
 *   alias): the container's user need not own the files (uid mapping is
 *   sandbox-run's decision); exact paths, never "*".
 * - gc.worktreePruneExpire=never: gc does not try to prune worktrees at all.
 * - gc.reflogExpire=never and gc.reflogExpireUnreachable=never: gc skips
 *   `reflog expire --all`, which would try to lock other worktrees' HEADs in the
 *   read-only registry and make gc fail ("fatal: failed to run reflog").
 * - core.splitIndex=false: the index is copied back after the session, alone
 *   (finish-store.ts); a split index would name a sharedindex file left behind.
 *
 * (packed-refs, gc's pack-refs and prune all work on the session's own store
 * now: git-store.ts.)
 *
 * The protection of other worktrees' registrations is the read-only mount, not
 * this configuration: an explicit `git worktree prune` ignores gc settings, and an
 * agent can unset environment variables.
 */
import type { GitConfigEntry } from '@agent-sandbox/shared/schemas/mount-plan';
import type { GitDetection } from './detect-git.js';

export function gitConfigFor(git: GitDetection, containerWorkspace: string): GitConfigEntry[] {
  if (git.kind === 'none') return [];
  const entries: GitConfigEntry[] = [{ key: 'safe.directory', value: containerWorkspace }];
  if (git.hostPathAlias && git.hostPathAlias !== containerWorkspace) {
    entries.push({ key: 'safe.directory', value: git.hostPathAlias });
  }
  entries.push(
    { key: 'gc.worktreePruneExpire', value: 'never' },
    { key: 'gc.reflogExpire', value: 'never' },
    { key: 'gc.reflogExpireUnreachable', value: 'never' },
    { key: 'core.splitIndex', value: 'false' },
  );
  return entries;
}

/** The same entries as GIT_CONFIG_COUNT / GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n>. */
export function gitConfigEnv(entries: GitConfigEntry[]): Record<string, string> {
  if (entries.length === 0) return {};
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(entries.length) };
  entries.forEach((entry, i) => {
    env[`GIT_CONFIG_KEY_${i}`] = entry.key;
    env[`GIT_CONFIG_VALUE_${i}`] = entry.value;
  });
  return env;
}

/**
 * The systemd-run argv of the handoff, pinned. Decisions (README, "Handoff"):
 * - `--user --pipe --wait --collect --quiet`, a named unit (recursion detection),
 *   `--same-dir`, and explicit PATH and HOME: the manager's environment is not ours.
 * - `$` stays literal: `--expand-environment=no` from systemd 254; before that every
 *   `$` after `--` is written `$$` (the manager turns `$$` back into `$`).
 * - The command runs under a tiny /bin/sh wrapper that writes its exit status to a
 *   file before exiting with it. systemd-run exits 1 for its own failures too, so its
 *   exit code alone cannot tell "the command exited 1" from "systemd-run failed";
 *   the status file can: present means the command finished, absent means it did not.
 */

/** systemd-run gained --expand-environment in 254. */
export const expandEnvironmentSince = 254;

/**
 * Runs "$@" through env (a PATH lookup like execvp, never a shell builtin), with
 * INT/TERM/HUP trapped so the wrapper outlives a signal sent to the whole unit and
 * still records the command's status. $0 is the status file.
 */
export const statusWrapper = 'trap : INT TERM HUP; /usr/bin/env -- "$@"; s=$?; echo "$s" > "$0"; exit "$s"';

/** Every `$` written `$$`, for systemd before 254. */
export function escapeDollars(arg: string): string {
  return arg.replace(/\$/g, () => '$$');
}

export interface HandoffPlan {
  /** From `systemd-run --version`; null is treated like an old systemd (escape). */
  systemdVersion: number | null;
  unit: string;
  path: string;
  home: string;
  statusFile: string;
  command: string[];
}

/** The full argv, starting with "systemd-run". */
export function buildHandoffArgv(plan: HandoffPlan): string[] {
  const modern = plan.systemdVersion !== null && plan.systemdVersion >= expandEnvironmentSince;
  const tail = ['/bin/sh', '-c', statusWrapper, plan.statusFile, ...plan.command];
  return [
    'systemd-run',
    '--user',
    '--pipe',
    '--wait',
    '--collect',
    '--quiet',
    `--unit=${plan.unit}`,
    '--same-dir',
    ...(modern ? ['--expand-environment=no'] : []),
    `--setenv=PATH=${plan.path}`,
    `--setenv=HOME=${plan.home}`,
    '--',
    ...(modern ? tail : tail.map(escapeDollars)),
  ];
}

/** PATH handed to the unit: the caller's, or a plain default when it has none. */
export function handoffPath(env: NodeJS.ProcessEnv): string {
  return env['PATH'] || '/usr/local/bin:/usr/bin:/bin';
}

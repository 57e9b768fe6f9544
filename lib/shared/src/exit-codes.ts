/**
 * The exit-code table of shared/DESIGN.md, the one place it is written down.
 * 0..79 (and anything the contained command returns) is the agent's own status,
 * passed through unchanged; our own refusals use 80..92 so a caller can tell
 * "the agent failed" from "we refused to start it".
 */
export const ExitCode = {
  /** malformed JSON, unknown field, bad flag */
  usage: 80,
  /** node unreachable / no host with the role / ssh failed before the remote side started */
  unreachable: 81,
  /** image absent */
  imageAbsent: 82,
  /** container failed to start (runtime error) */
  startFailed: 83,
  /** systemd-run needed but user manager, bus or linger missing */
  userManager: 84,
  /** credential unresolvable for the runtime, or expiring too soon to stage */
  credential: 85,
  /** path outside the permitted root after realpath, or unsafe path */
  unsafePath: 86,
  /** git metadata cannot be mounted at the same absolute paths */
  gitMount: 87,
  /** limits cannot be enforced here */
  limits: 88,
  /** systemd-run itself failed (distinct from the contained command's status) */
  systemdRun: 89,
  /** refused by policy: recursion, agent marker, container env, no TTY */
  policy: 90,
  /** internal error (a bug) */
  internal: 91,
  /** the workspace is busy: another session runs in it (the message names it) */
  busy: 92,
} as const;

export type ExitName = keyof typeof ExitCode;
export type ToolExitCode = (typeof ExitCode)[ExitName];

/** Every exit status one of our tools may produce on its own behalf. */
export const toolExitCodes: readonly number[] = Object.values(ExitCode);

/** The name of an exit code, for messages and the ledger ("unsafePath" for 86). */
export function exitName(code: number): ExitName | undefined {
  return (Object.keys(ExitCode) as ExitName[]).find((name) => ExitCode[name] === code);
}

/**
 * The exit-code table of docs/design.md, the one place it is written down: each exit's number,
 * a few words for `--help` and its meaning for the READMEs (whose tables are generated from it:
 * scripts/write-docs.mjs). 0..79 (and anything the contained command returns) is the agent's own
 * status, passed through unchanged; our own refusals use 80..93 so a caller can tell "the agent
 * failed" from "we refused to start it".
 */
export interface ExitRow {
  exit: number;
  /** A few words, for `--help`. */
  brief: string;
  /** What the exit means, for the READMEs; the message of each refusal names the cause. */
  meaning: string;
}

export const exitTable = {
  usage: {
    exit: 80,
    brief: 'usage',
    meaning: 'usage: malformed JSON, unknown field, bad flag or limit (the message names the flag or field)',
  },
  unreachable: {
    exit: 81,
    brief: 'node unreachable',
    meaning: 'node unreachable / no host with the role / ssh failed before the remote side started',
  },
  imageAbsent: { exit: 82, brief: 'image absent', meaning: 'image absent' },
  startFailed: {
    exit: 83,
    brief: 'container failed to start',
    meaning:
      "container could not be started (runtime error, podman's own 125, seccomp profile missing, ledger or podman storage not writable)",
  },
  userManager: {
    exit: 84,
    brief: 'user manager missing (loginctl enable-linger)',
    meaning: 'systemd-run needed but user manager, bus or linger missing (`loginctl enable-linger`)',
  },
  credential: { exit: 85, brief: 'credential', meaning: 'credential unresolvable for the runtime (or expiring within the session)' },
  unsafePath: { exit: 86, brief: 'unsafe path', meaning: 'path outside the permitted root after realpath, or unsafe path' },
  gitMount: {
    exit: 87,
    brief: 'git metadata not mountable',
    meaning: 'git metadata cannot be mounted at the same absolute paths (or host git config names a file the session can write)',
  },
  limits: {
    exit: 88,
    brief: 'limits not enforceable',
    meaning: 'limits cannot be enforced here (rootless on cgroup v1, controllers not delegated, no room for the disk ceiling)',
  },
  systemdRun: {
    exit: 89,
    brief: 'systemd-run failed',
    meaning: "systemd-run itself failed (distinct from the contained command's status)",
  },
  policy: {
    exit: 90,
    brief: 'refused by policy',
    meaning: 'refused by policy: recursion, agent marker, container env, no TTY (the hatch)',
  },
  internal: { exit: 91, brief: 'internal error', meaning: 'internal error (a bug)' },
  busy: {
    exit: 92,
    brief: 'workspace busy',
    meaning: 'the workspace is busy: another session runs in it (the message names who, since when, which container)',
  },
  notRunning: {
    exit: 93,
    brief: 'no session running',
    meaning: 'no session of that workspace runs (stop, shell): there is nothing to act on',
  },
} as const satisfies Record<string, ExitRow>;

export type ExitName = keyof typeof exitTable;

/** Exit name -> number (`ExitCode.usage` is 80). */
export const ExitCode = Object.fromEntries(Object.entries(exitTable).map(([name, row]) => [name, row.exit])) as {
  readonly [K in ExitName]: (typeof exitTable)[K]['exit'];
};

export type ToolExitCode = (typeof ExitCode)[ExitName];

/** Every exit status one of our tools may produce on its own behalf. */
export const toolExitCodes: readonly number[] = Object.values(ExitCode);

/** The name of an exit code, for messages and the ledger ("unsafePath" for 86). */
export function exitName(code: number): ExitName | undefined {
  return (Object.keys(exitTable) as ExitName[]).find((name) => exitTable[name].exit === code);
}

/** The exit codes as `--help` ends with them, from the table. */
export function exitCodesHelp(): string {
  const ours = Object.values(exitTable).map((row: ExitRow) => `${row.exit} ${row.brief}`);
  return `Exit codes: 0..255 the contained command's own status; ${ours.join('; ')}.`;
}

/**
 * How the uncontained agent is limited. With a systemd user manager: its own
 * transient scope in unsafe.slice with MemoryMax and TasksMax, a cgroup that
 * covers the whole tree. Without one (these machines): rlimits set by
 * `prlimit` as the agent's launcher, since Node cannot setrlimit itself.
 * rlimits are weaker and the banner says how: RLIMIT_NPROC counts every
 * process of the user (so the budget is added to the count at launch, and root
 * is exempt), RLIMIT_AS bounds each process's address space, not the total.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export const gib = 1024 ** 3;

/** 17179869184 -> "16 GiB" (exact sizes stay exact: 1.5 GiB is "1536 MiB"). */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', gib],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}

/** Defaults: sandbox-run's (memory 12g, pids 512); address space 16 GiB because V8's wasm reserves ~10 GiB. */
export const defaultLimits = { memoryBytes: 12 * gib, tasks: 512, addressSpaceBytes: 16 * gib } as const;

export interface LimitRequest {
  memoryBytes: number;
  tasks: number;
  addressSpaceBytes: number;
}

export interface LaunchPlan {
  mechanism: 'systemd-run' | 'prlimit';
  argv: string[];
  limits: { memoryBytes: number; tasks: number; nproc?: number; addressSpaceBytes?: number };
  /** Banner lines describing the limits, for the human. */
  notes: string[];
}

export interface LimitDeps {
  uid: number;
  /** Absolute path of a program on PATH, or undefined. */
  which(name: string): string | undefined;
  /** True when the user's systemd manager socket exists. */
  userManagerPresent(uid: number): boolean;
  /** systemd-run's version number (252), or undefined when it cannot be read. */
  systemdVersion(systemdRun: string): number | undefined;
  /** Processes that belong to `uid` right now (RLIMIT_NPROC counts them all). */
  countUserProcesses(uid: number): number;
}

/** The manager's private socket: present exactly when `systemd --user` runs for the uid. */
export function userManagerSocket(uid: number): string {
  return `/run/user/${uid}/systemd/private`;
}

/** The first executable `name` on a PATH string. */
export function whichOnPath(name: string, pathEnv: string | undefined): string | undefined {
  for (const dir of (pathEnv ?? '').split(':')) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    try {
      const info = statSync(candidate);
      if (info.isFile() && (info.mode & 0o111) !== 0) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export function countProcessesOf(uid: number, procRoot = '/proc'): number {
  let count = 0;
  for (const entry of readdirSync(procRoot)) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`${procRoot}/${entry}/status`, 'latin1');
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (Number(real) === uid) count += 1;
    } catch {
      // exited meanwhile
    }
  }
  return count;
}

/** "systemd 252 (252.39-1~deb12u1)" -> 252. */
export function parseSystemdVersion(text: string): number | undefined {
  const match = /^systemd (\d+)/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

function systemdRunPlan(systemdRun: string, version: number | undefined, binary: string, args: string[], req: LimitRequest): LaunchPlan {
  // From 254 on, --scope expands ${VAR} in the command line unless told not to; 252's
  // scope mode execs the argv as given and does not know the option.
  const noExpand = version !== undefined && version >= 254 ? ['--expand-environment=no'] : [];
  return {
    mechanism: 'systemd-run',
    argv: [
      systemdRun,
      '--user',
      '--scope',
      '--slice=unsafe.slice',
      '--quiet',
      '--collect',
      ...noExpand,
      '-p',
      `MemoryMax=${req.memoryBytes}`,
      '-p',
      `TasksMax=${req.tasks}`,
      '--',
      binary,
      ...args,
    ],
    limits: { memoryBytes: req.memoryBytes, tasks: req.tasks },
    notes: [
      `limits: its own systemd scope in unsafe.slice (user manager): MemoryMax=${formatBytes(req.memoryBytes)}, TasksMax=${req.tasks}; they cover the whole process tree.`,
    ],
  };
}

function prlimitPlan(prlimit: string, deps: LimitDeps, binary: string, args: string[], req: LimitRequest): LaunchPlan {
  const existing = deps.countUserProcesses(deps.uid);
  const nproc = existing + req.tasks;
  const notes = [
    'limits: no systemd user manager here, so no cgroup; rlimits are set by prlimit instead:',
    `  processes <= ${nproc} for uid ${deps.uid} (your ${existing} existing processes + ${req.tasks}); RLIMIT_NPROC counts every process of the user.`,
    `  address space <= ${formatBytes(req.addressSpaceBytes)} per process (RLIMIT_AS), not a total for the session; memory in total is NOT limited.`,
  ];
  if (deps.uid === 0) notes.push('  you are root: the kernel does not enforce RLIMIT_NPROC for root, so the process limit has no effect.');
  return {
    mechanism: 'prlimit',
    argv: [prlimit, `--nproc=${nproc}`, `--as=${req.addressSpaceBytes}`, '--', binary, ...args],
    limits: { memoryBytes: req.memoryBytes, tasks: req.tasks, nproc, addressSpaceBytes: req.addressSpaceBytes },
    notes,
  };
}

/**
 * The launch argv for `binary args`. Throws when neither mechanism is available:
 * the hatch never starts an agent with no limits at all.
 */
export function planLimits(binary: string, args: string[], req: LimitRequest, deps: LimitDeps): LaunchPlan | undefined {
  const systemdRun = deps.which('systemd-run');
  if (systemdRun && deps.userManagerPresent(deps.uid)) {
    return systemdRunPlan(systemdRun, deps.systemdVersion(systemdRun), binary, args, req);
  }
  const prlimit = deps.which('prlimit');
  return prlimit ? prlimitPlan(prlimit, deps, binary, args, req) : undefined;
}

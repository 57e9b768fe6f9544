/**
 * The library cores the launcher composes in one process (shared/DESIGN.md: five node
 * processes would cost more than the container). The shapes are the agreed interfaces of
 * /tmp/interfaces.md; `realCores()` binds them to the tools' index.ts exports, and tests
 * may pass their own only where a real part cannot run here.
 */
import type { Mount } from '@agent-sandbox/shared/schemas/agent-sandbox';

export interface MountT {
  source: string;
  destination: string;
  readOnly: boolean;
}

export interface CredentialPlan {
  ok: true;
  runtime: string;
  identity?: unknown;
  /** True when an expiring token was staged because the caller passed allowExpiring. */
  expiryOverride?: boolean;
  mounts: MountT[];
  install: { from: string; to: string; mode?: string | number }[];
}

export interface MountPlan {
  ok: true;
  mounts: MountT[];
  workdir: string;
  git: { kind: string; gitDir?: string; commonDir?: string };
  /** git's command-scope configuration for the container (GIT_CONFIG_COUNT/KEY_n/VALUE_n: safe.directory). */
  env: Record<string, string>;
}

export interface NnpProbe {
  ok: boolean;
  noNewPrivs: boolean;
  reexec: boolean;
  systemdVersion?: number | null;
  userManager: Record<string, unknown>;
  argv?: string[];
}

export interface RunPlan {
  sessionId: string;
  name?: string;
  image: string;
  cgroupParent?: string;
  network?: string;
  mounts: MountT[];
  limits: { memory: string; memorySwap: string; pids: number; cpus: number; cpuShares: number };
  env: string[];
  command: string[];
  tty: boolean;
  workdir?: string;
  user?: string;
  [extra: string]: unknown;
}

export interface RunOutcome {
  exitCode: number;
  startedAt: string;
  endedAt: string;
  containerName: string;
  interrupted?: 'SIGINT' | 'SIGTERM';
  /** podman's stderr tail, for start failures. */
  stderrTail?: string;
}

export interface Attribution {
  exitCode: number;
  reason: string;
  evidence: Record<string, unknown>;
  peak: { memoryBytes: number | null; pids: number | null; cpuSeconds: number | null };
}

export interface Prepared {
  cgroupParent: string;
  cidfile?: string;
  cleanup(): unknown;
  /** The tool's own handle (podman-attrib's Attribution), passed back to attributeEnd. */
  handle: unknown;
}

/** A file output is appended to (execa's file target). */
export type LogTarget = { file: string; append: true };

export interface RunHooks {
  beforeRemove?: (x: { containerName: string; exitCode: number }) => Promise<void> | void;
  /** stdio of the podman process: 'inherit' (run), or [stdin, fd, fd] (exec: the log file). */
  stdio: 'inherit' | ['ignore' | 'inherit', LogTarget | 'inherit', LogTarget | 'inherit'];
  /** The whole environment podman runs with; the plan's env names take their values from it. */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface CredInput {
  runtime: string;
  home?: string;
  account?: string;
  stageDir?: string;
  allowExpiring?: boolean;
}

/**
 * What the launcher needs from the other tools, one verb each. `realCores()` (real-cores.ts)
 * binds these to the tools' library exports; this is the launcher-side adapter.
 */
export interface Cores {
  planCredentials(input: CredInput, env: NodeJS.ProcessEnv): Promise<CredentialPlan>;
  stageCredentials(input: CredInput & { stageDir: string }, env: NodeJS.ProcessEnv): Promise<CredentialPlan>;
  unstageCredentials(stageDir: string): Promise<void>;
  planMounts(input: { workspace: string; root: string; sessionId: string; credentials?: MountT[]; gitRoots?: string[] }): Promise<MountPlan>;
  probe(): Promise<NnpProbe>;
  /** Runs argv through the systemd-run --user handoff; returns its exit status (89 on its own failure). */
  execWithHandoff(argv: string[]): Promise<number>;
  buildRunArgv(plan: RunPlan): Promise<string[]>;
  runPlan(plan: RunPlan, hooks: RunHooks): Promise<RunOutcome>;
  /** A caller-owned parent cgroup (and cidfile) that outlive the container. */
  prepareAttribution(input: { sessionId: string }): Promise<Prepared>;
  startSampler(prepared: Prepared): Promise<{ stop(): Promise<Attribution['peak'] | undefined> }>;
  attributeEnd(input: {
    prepared: Prepared;
    sessionId: string;
    containerName: string;
    exitCode: number;
    startedAt?: string;
    endedAt?: string;
    stderrTail?: string;
    sampled?: Attribution['peak'];
    interrupted?: 'SIGINT' | 'SIGTERM';
  }): Promise<Attribution>;
}

export type { Mount };

/**
 * One session, composed in this process: layout (path-guard), credentials (cred-stage),
 * mounts (mount-plan), the run plan and its argv (sandbox-run), attribution (podman-attrib).
 * The only way the agent's command is ever started is inside the run plan handed to
 * sandbox-run, i.e. as the command of a podman container; nothing here spawns it.
 */
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import type { ContainmentMode, RuntimeName, SessionLimits } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { Attribution, Cores, CredentialPlan, MountPlan, RunHooks, RunOutcome, RunPlan } from './cores.js';
import { runtimeRow } from './runtimes.js';
import { podmanEnv } from '@agent-sandbox/shared/podman';
import { defaultLimits as sandboxRunDefaultLimits } from '@agent-sandbox/sandbox-run';
import { prepareHome, scrubInstalled } from './session-home.js';
import { resolveLayout, type SessionLayout } from './session-layout.js';

/** The session image with the real agent CLIs (image/Containerfile.agents). */
export const defaultImage = 'localhost/agent-sandbox-agents:latest';

/** sandbox-run's defaults, measured from real agent sessions (scripts/measure-agents.mjs; README). */
export const defaultLimits: SessionLimits = {
  ...sandboxRunDefaultLimits,
  memory: String(sandboxRunDefaultLimits.memory),
  memorySwap: String(sandboxRunDefaultLimits.memorySwap),
};

export interface SessionOptions {
  runtime: RuntimeName;
  workspace: string;
  root: string;
  account?: string;
  /** Whose credential files are staged (default the launcher's HOME). */
  credentialHome?: string;
  limits: SessionLimits;
  image: string;
  /** The binary run inside the container (default the runtime's CLI). Never run on the host. */
  agentBin?: string;
  agentArgs: string[];
  /** The container's network: "none" (default) or "ns:/run/netns/<name>". */
  network?: string;
  /** Stage a credential expiring within the session anyway (cred-stage allowExpiring). */
  allowExpiring?: boolean;
  /** Directories besides the root where git metadata may be (mount-plan gitRoots). */
  gitRoots?: string[];
  tty: boolean;
  interactive: boolean;
  /** The launcher's environment: values of the runtime's env names, and cred-stage's lookups. */
  env: NodeJS.ProcessEnv;
  containment: ContainmentMode;
  host: string;
}

export interface SessionPlan {
  sessionId: string;
  runtime: RuntimeName;
  account: string | null;
  host: string;
  containment: ContainmentMode;
  image: string;
  limits: SessionLimits;
  layout: SessionLayout;
  credentials: CredentialPlan;
  mounts: MountPlan;
  runPlan: RunPlan;
  argv: string[];
  /**
   * Values the launcher itself sets in the container (names in runPlan.env): git's
   * command-scope configuration from mount-plan, without which git inside refuses a workspace
   * it does not own ("dubious ownership") or a worktree seen at its host path.
   */
  containerEnv: Record<string, string>;
  /** Where cred-stage put the staged copies (removed when the session ends). */
  stageDir: string;
}

/** Who and what a session is, as its plan output and its ledger line both state it. */
export function sessionIdentity(plan: SessionPlan) {
  const { sessionId, runtime, account, host, containment, image, limits } = plan;
  return { sessionId, runtime, account, host, containment, image, limits };
}

/** The session's staging directory for credential copies: <root>/secrets/<sessionId>, never mounted whole. */
export function stageDirFor(layout: SessionLayout): string {
  return path.join(layout.root, 'secrets', layout.sessionId);
}

/** The command run inside the container: the runtime's CLI (or --agent-bin) and the agent's args. */
export function containerCommand(options: Pick<SessionOptions, 'runtime' | 'agentBin' | 'agentArgs'>): string[] {
  return [options.agentBin ?? runtimeRow(options.runtime).binary, ...options.agentArgs];
}

/**
 * Composes the session plan. `stage` true makes the credential copies (run path); false
 * only plans them (plan and kube). Each refusal keeps its own exit code (85, 86, 87).
 */
export async function composePlan(options: SessionOptions, cores: Cores, stage: boolean): Promise<SessionPlan> {
  const layout = await resolveLayout(options.workspace, options.root);
  const row = runtimeRow(options.runtime);
  const stageDir = stageDirFor(layout);
  const credInput = {
    runtime: row.credentialRuntime,
    ...(options.credentialHome ? { home: options.credentialHome } : {}),
    ...(options.account ? { account: options.account } : {}),
    ...(options.allowExpiring ? { allowExpiring: true } : {}),
  };
  const credentials = stage ? await cores.stageCredentials({ ...credInput, stageDir }, options.env) : await cores.planCredentials(credInput, options.env);
  const mounts = await cores.planMounts({
    workspace: layout.workspace,
    root: layout.root,
    sessionId: layout.sessionId,
    credentials: credentials.mounts,
    ...(options.gitRoots ? { gitRoots: [layout.root, ...options.gitRoots] } : {}),
  });
  const runPlan: RunPlan = {
    image: options.image,
    sessionId: layout.sessionId,
    network: options.network ?? 'none',
    mounts: mounts.mounts,
    limits: options.limits,
    env: [...new Set([...row.env.filter((name) => options.env[name] !== undefined), ...Object.keys(mounts.env), 'AGENT_SANDBOX_SESSION'])],
    command: containerCommand(options),
    tty: options.tty,
    interactive: options.interactive,
    workdir: mounts.workdir,
    user: '1000:1000',
    // podman run --rm: attribution reads only what outlives the container (exit status, the
    // parent cgroup, the kernel and event logs), so no second podman process removes it.
    remove: true,
  };
  const argv = await cores.buildRunArgv(runPlan);
  const identity = credentials.identity as { account?: string } | undefined;
  return {
    sessionId: layout.sessionId,
    runtime: options.runtime,
    account: identity?.account ?? options.account ?? null,
    host: options.host,
    containment: options.containment,
    image: options.image,
    limits: options.limits,
    layout,
    credentials,
    mounts,
    runPlan,
    argv,
    containerEnv: mounts.env,
    stageDir,
  };
}

export interface SessionRun {
  exitCode: number;
  startedAt: string;
  endedAt: string;
  attribution: Attribution;
  interrupted?: string;
}

/**
 * Runs a composed plan: a caller-owned parent cgroup for attribution, a sampler for peaks,
 * sandbox-run's runPlan (`podman run --rm`: the container is gone when it returns), then
 * attribution from what outlives the container (podman-attrib's common path, no podman process). Staged credential copies are removed on every path.
 */
export async function runComposed(plan: SessionPlan, cores: Cores, stdio: RunHooks['stdio'], env: NodeJS.ProcessEnv): Promise<SessionRun> {
  const home = plan.layout.home;
  prepareHome(home, process.geteuid?.() ?? 0);
  const prepared = await cores.prepareAttribution({ sessionId: plan.sessionId });
  try {
    const sampler = await cores.startSampler(prepared);
    const runPlan: RunPlan = { ...plan.runPlan, cgroupParent: prepared.cgroupParent };
    let outcome: RunOutcome;
    let sampled: Attribution['peak'] | undefined;
    try {
      outcome = await cores.runPlan(runPlan, {
        stdio,
        env: podmanEnv({ ...env, ...plan.containerEnv, AGENT_SANDBOX_SESSION: plan.sessionId }, plan.runPlan.env),
      });
    } finally {
      sampled = await sampler.stop();
    }
    const attribution = await cores.attributeEnd({
      prepared,
      sessionId: plan.sessionId,
      containerName: outcome.containerName,
      exitCode: outcome.exitCode,
      startedAt: outcome.startedAt,
      endedAt: outcome.endedAt,
      ...(outcome.stderrTail ? { stderrTail: outcome.stderrTail } : {}),
      ...(sampled ? { sampled } : {}),
      ...(outcome.interrupted ? { interrupted: outcome.interrupted } : {}),
    });
    return {
      exitCode: outcome.exitCode,
      startedAt: outcome.startedAt,
      endedAt: outcome.endedAt,
      attribution,
      ...(outcome.interrupted ? { interrupted: outcome.interrupted } : {}),
    };
  } finally {
    await prepared.cleanup();
    await cores.unstageCredentials(plan.stageDir);
    scrubInstalled(home, plan.credentials.install);
  }
}

/** A run whose container never started is a refusal (83), not an agent status. */
export function checkStarted(run: SessionRun): void {
  if (run.attribution.reason === 'start-failed') {
    const tail = (run.attribution.evidence['stderrTail'] as string | undefined) ?? '';
    throw new ToolError('startFailed', 'start-failed', `the container failed to start (podman exit ${run.exitCode}): ${tail.trim().split('\n').slice(-2).join(' | ') || 'no stderr'}`, {
      podmanExit: run.exitCode,
    });
  }
}

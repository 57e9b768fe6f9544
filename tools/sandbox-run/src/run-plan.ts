/**
 * Runs a plan: preflight, then ONE podman process (`podman run --rm`) on the
 * common path, its exit status passed through unchanged. On SIGINT/SIGTERM
 * the container is stopped by name (a grace period, then killed), and checked
 * gone (removed if podman run could not) before runPlan returns.
 */
import { ToolError } from '@agent-sandbox/shared';
import { runPodman, spawnPodmanAttached, type AttachedStdio } from '@agent-sandbox/shared/podman';
import type { RunPlan } from '@agent-sandbox/shared/schemas/sandbox-run';
import { constants } from 'node:os';
import { buildRunArgs, buildRunArgv, type RunFacts } from './argv.js';
import { resolvePlan, type ResolvedPlan } from './plan.js';
import { preflight, type PreflightDeps } from './preflight.js';

export type StopSignal = 'SIGINT' | 'SIGTERM';

export interface RunHooks {
  preflight?: PreflightDeps;
  /** The host facts of an earlier hostPreflight (the launcher's): only the plan's own checks run again. */
  facts?: RunFacts;
  /**
   * Aborted to stop the session (the launcher's timeout, disk ceiling, lost connection): the
   * container is stopped as on SIGTERM, and the outcome's `stopped` is the abort's reason.
   */
  stop?: AbortSignal;
  /** stdio of the podman process (default 'inherit': the container owns the caller's terminal). */
  stdio?: AttachedStdio;
  /** The environment podman runs with; `env` names in the plan take their values from it (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Called once podman has been spawned (pid: the podman client's). */
  onStart?: (info: { containerName: string; argv: string[]; startedAt: string; pid: number | undefined }) => void;
  /** Only when the plan has `remove: false`: called after the command ended, while the container still exists. */
  beforeRemove?: (info: { containerName: string; exitCode: number }) => Promise<void> | void;
  /**
   * Seconds between the stop signal and SIGKILL when interrupted (default 3: done before a
   * supervisor's usual 5 s force-kill); a function is asked with the stop's reason (the abort
   * reason of `stop`, or SIGINT/SIGTERM), so a caller can give one reason no grace.
   */
  stopGraceSeconds?: number | ((why: string) => number);
  /** Install SIGINT/SIGTERM handlers for the duration of the run (default true). */
  handleSignals?: boolean;
  /** Human text (stderr). */
  log?: (line: string) => void;
}

export interface RunOutcome {
  /** The contained command's status, unchanged; 128+n when interrupted and the container's own status is unknown. */
  exitCode: number;
  startedAt: string;
  endedAt: string;
  containerName: string;
  interrupted?: StopSignal;
  /** Why the caller stopped it (RunHooks.stop's reason), when it did. */
  stopped?: string;
  argv: string[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Stops the container by name, also when it is being created right now (retries until podman
 * run has ended). It stops and does not remove: removing it under the attached `podman run --rm`
 * races that run's own clean-up, which then fails with an error of its own (exit 127, "unable
 * to determine if .../shm is mounted", seen rootless under systemd) in place of the container's
 * status. Stopped, the container ends as if on its own, and podman run reports its status.
 */
async function stopUntilGone(name: string, graceSeconds: number, done: () => boolean, abort: () => void): Promise<void> {
  for (let attempt = 0; attempt < 10 && !done(); attempt += 1) {
    await runPodman(['stop', '--ignore', '--time', String(attempt === 0 ? graceSeconds : 0), name], {
      expect: 'any',
      timeoutMs: (graceSeconds + 30) * 1000,
    });
    for (let waited = 0; waited < 1000 && !done(); waited += 50) await sleep(50);
  }
  if (!done()) abort();
}

async function containerExists(name: string): Promise<boolean> {
  return (await runPodman(['container', 'exists', name], { expect: 'any', timeoutMs: 30_000 })).exitCode === 0;
}

async function removeContainer(name: string): Promise<void> {
  await runPodman(['rm', '--force', '--ignore', '--time', '0', name], { expect: [0], timeoutMs: 60_000 });
}

/**
 * What stops a running session: SIGINT/SIGTERM to this process (unless the caller handles
 * them) and the caller's stop signal. Either stops the container by name, with a grace
 * period, until podman run has returned.
 */
function stopControl(name: string, hooks: RunHooks, finished: () => boolean) {
  const aborter = new AbortController();
  const state: { interrupted?: StopSignal; stopped?: string; stopping?: Promise<void> } = {};
  const stopContainer = (why: string) => {
    hooks.log?.(`sandbox-run: ${why}: stopping container ${name}`);
    const grace = typeof hooks.stopGraceSeconds === 'function' ? hooks.stopGraceSeconds(why) : (hooks.stopGraceSeconds ?? 3);
    state.stopping ??= stopUntilGone(name, grace, finished, () => aborter.abort());
  };
  const onSignal = (signal: StopSignal) => {
    state.interrupted ??= signal;
    stopContainer(signal);
  };
  const onStop = () => {
    state.stopped ??= String(hooks.stop?.reason ?? 'stopped');
    stopContainer(state.stopped);
  };
  const handlers = { SIGINT: () => onSignal('SIGINT'), SIGTERM: () => onSignal('SIGTERM') };
  if (hooks.handleSignals !== false) for (const [sig, fn] of Object.entries(handlers)) process.on(sig, fn);
  if (hooks.stop?.aborted) onStop();
  else hooks.stop?.addEventListener('abort', onStop, { once: true });
  return {
    state,
    signal: aborter.signal,
    detach() {
      if (hooks.handleSignals !== false) for (const [sig, fn] of Object.entries(handlers)) process.off(sig, fn);
      hooks.stop?.removeEventListener('abort', onStop);
    },
  };
}

/**
 * Preflight, run, pass the status through. Throws ToolError 80/82/83/86/88 when
 * nothing could start (83 also when podman itself failed: its exit 125).
 */
export async function runPlan(plan: RunPlan | ResolvedPlan, hooks: RunHooks = {}): Promise<RunOutcome> {
  const resolved = resolvePlan(plan);
  const facts = await preflight(resolved, hooks.preflight, hooks.facts);
  const argv = buildRunArgv(resolved, facts);
  const name = resolved.name;
  let finished = false;
  const control = stopControl(name, hooks, () => finished);
  const startedAt = new Date().toISOString();
  let exitCode: number;
  try {
    exitCode = await spawnPodmanAttached(buildRunArgs(resolved, facts), {
      stdio: hooks.stdio ?? 'inherit',
      ...(hooks.env ? { env: hooks.env } : { passEnv: resolved.env }),
      signal: control.signal,
      onSpawn: (pid) => hooks.onStart?.({ containerName: name, argv, startedAt, pid }),
    });
  } finally {
    finished = true;
    control.detach();
  }
  const endedAt = new Date().toISOString();
  const { interrupted, stopped } = control.state;
  if (interrupted || stopped) {
    await control.state.stopping;
    if (await containerExists(name)) await removeContainer(name);
    if (exitCode < 0 || exitCode > 255 || exitCode === 125) exitCode = 128 + constants.signals[interrupted ?? 'SIGKILL'];
    return {
      exitCode,
      startedAt,
      endedAt,
      containerName: name,
      ...(interrupted ? { interrupted } : {}),
      ...(stopped ? { stopped } : {}),
      argv,
    };
  }
  return await settle(resolved, hooks, { exitCode, startedAt, endedAt, argv });
}

/** A run that was not stopped: podman's own failures are refusals; kept containers are removed after the hook. */
async function settle(
  resolved: ResolvedPlan,
  hooks: RunHooks,
  run: { exitCode: number; startedAt: string; endedAt: string; argv: string[] },
): Promise<RunOutcome> {
  const { name } = resolved;
  const { exitCode, startedAt, endedAt, argv } = run;
  if (exitCode === 125) {
    // podman's own failure (name in use, bad flag, storage): the command never ran. Someone
    // else may own a container of this name, so nothing is removed by name here.
    throw new ToolError(
      'startFailed',
      'podman-run-failed',
      `container ${name} did not start: podman run exited 125 (its message is on stderr above)`,
      {
        containerName: name,
        startedAt,
      },
    );
  }
  if (exitCode < 0) {
    // podman itself was killed: its --rm never ran.
    await removeContainer(name);
    throw new ToolError('startFailed', 'podman-killed', `podman run for ${name} ended without a status; the container was removed`, {
      containerName: name,
    });
  }
  if (!resolved.remove) {
    try {
      await hooks.beforeRemove?.({ containerName: name, exitCode });
    } finally {
      await removeContainer(name);
    }
  }
  return { exitCode, startedAt, endedAt, containerName: name, argv };
}

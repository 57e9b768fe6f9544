/**
 * The session plan, composed without side effects from what the request, the layout and the
 * preflight established: the mounts (mount-plan's, plus cred-stage's read-only staging mounts),
 * the run plan for sandbox-run, and its exact podman argv. `plan` prints it, `kube` turns it
 * into a Pod, and `run`/`exec` run it. The only way the agent's command is ever started is as
 * the command of this run plan, i.e. inside a podman container.
 */
import {
  agentUser,
  containerEntrypointLog,
  containerHome,
  containerPath,
  entrypointLogEnvName,
  sessionEnvName,
} from '@agent-sandbox/shared/container-layout';
import { runtimes } from '@agent-sandbox/shared/runtimes';
import { parseDuration } from '@agent-sandbox/shared/limits';
import type { CredStagePlanOutput } from '@agent-sandbox/shared/schemas/cred-stage';
import type { MountEntry, MountPlanOutput } from '@agent-sandbox/shared/schemas/mount-plan';
import type { RunPlan } from '@agent-sandbox/shared/schemas/sandbox-run';
import { orderMounts } from '@agent-sandbox/mount-plan';
import { buildRunArgv, type RunFacts } from '@agent-sandbox/sandbox-run';
import type { SessionLayout } from '../workspace/layout.js';
import type { SessionIdentity } from '../ledger/verdict.js';
import type { LaunchRequest } from './request.js';
import { egressMount, proxyEnv, relayPrefix, type EgressPlan } from '../egress/broker.js';
import { caEnv, caMount } from '../egress/ca-file.js';
import { publishMounts, publishPrefix, type PublishPlan } from '../egress/publish.js';
import { noCaches, type CacheGrant, type PlannedCaches } from './caches.js';

export type { SessionIdentity };

export interface SessionPlan {
  identity: SessionIdentity;
  egress: EgressPlan;
  /** The ports carried from the host's loopback (run --publish). */
  publish: PublishPlan;
  layout: SessionLayout;
  credentials: CredStagePlanOutput;
  mounts: MountPlanOutput;
  /** Every mount the container gets, in mount order (mount-plan's and the staged credentials). */
  allMounts: MountEntry[];
  runPlan: RunPlan;
  argv: string[];
  /** Values behind the launcher's own names in runPlan.env (git's command-scope config, the proxy URLs): not secrets. */
  containerEnv: Record<string, string>;
  /** The host package caches given (--cache): read-only below a private layer. */
  caches: CacheGrant[];
}

export interface ComposeInput {
  request: Pick<LaunchRequest, 'runtime' | 'image' | 'agentBin' | 'agentArgs' | 'network' | 'mode'>;
  egress: EgressPlan;
  publish: PublishPlan;
  identity: SessionIdentity;
  layout: SessionLayout;
  credentials: CredStagePlanOutput;
  mounts: MountPlanOutput;
  /** The host package caches (session/caches.ts); none when absent. */
  caches?: PlannedCaches;
  facts: RunFacts;
  /** The caller's environment: which of the runtime's variable names are set. */
  env: NodeJS.ProcessEnv;
  tty: boolean;
}

/** The command run inside the container: the runtime's CLI (or --agent-bin) and the agent's args. */
export function containerCommand(request: Pick<LaunchRequest, 'runtime' | 'agentBin' | 'agentArgs'>): string[] {
  return [request.agentBin ?? runtimes[request.runtime].binary, ...request.agentArgs];
}

/** The environment the container gets besides the names passed through from the caller. */
export function containerEnvOf(plan: Pick<SessionPlan, 'containerEnv' | 'identity'>): Record<string, string> {
  return { ...plan.containerEnv, [sessionEnvName]: plan.identity.sessionId };
}

/** How long after the session's --timeout podman's own --timeout kills it: the launcher's stop (3 s of grace) normally comes first. */
export const podmanTimeoutMarginSeconds = 10;

export function composePlan(input: ComposeInput): SessionPlan {
  const { request, identity, layout, credentials, mounts, egress, publish } = input;
  const socketMount = egress.socketDir ? [{ source: egress.socketDir, destination: egressMount, readOnly: true }] : [];
  const caMounts = egress.ca ? [{ source: egress.ca.staged, destination: caMount, readOnly: true }] : [];
  const caches = input.caches ?? noCaches;
  const allMounts = orderMounts([
    ...mounts.mounts,
    ...credentials.mounts,
    ...socketMount,
    ...caMounts,
    ...publishMounts(publish),
    ...caches.mounts,
  ]);
  const passed = runtimes[request.runtime].env.filter((name) => input.env[name] !== undefined);
  // A quiet terminal: the entrypoint's own lines go to a file in the home (read into the ledger; --verbose says them after).
  const quiet: Record<string, string> = { [entrypointLogEnvName]: containerEntrypointLog };
  const containerEnv = { ...mounts.env, ...proxyEnv(egress), ...caEnv(egress.ca), ...caches.env, ...quiet };
  const runPlan: RunPlan = {
    image: identity.image,
    sessionId: layout.sessionId,
    name: layout.containerName,
    network: request.network,
    mounts: allMounts,
    limits: {
      memory: identity.limits.memory,
      memorySwap: identity.limits.memorySwap,
      pids: identity.limits.pids,
      cpus: identity.limits.cpus,
      cpuShares: identity.limits.cpuShares,
    },
    env: [...new Set([...passed, ...Object.keys(containerEnv), sessionEnvName])],
    command: [...publishPrefix(publish), ...relayPrefix(egress, identity.limits.pids), ...containerCommand(request)],
    tty: input.tty,
    interactive: request.mode === 'run',
    // The backstop that needs none of our processes: conmon kills the container a little after
    // the launcher's own timeout would have stopped it, also when the launcher and its sentinel
    // were both killed.
    timeoutSeconds: parseDuration('--timeout', identity.limits.timeout) + podmanTimeoutMarginSeconds,
    workdir: mounts.workdir,
    user: agentUser,
    // podman run --rm: attribution reads only what outlives the container (exit status, the
    // parent cgroup, the kernel and event logs), so no second podman process removes it.
    remove: true,
  };
  return {
    identity,
    egress,
    publish,
    layout,
    credentials,
    mounts,
    allMounts,
    runPlan,
    argv: buildRunArgv(runPlan, input.facts),
    containerEnv,
    caches: caches.grants,
  };
}

/** The environment a Pod gets for the same plan (kube): PATH and HOME, which podman sets itself; the entrypoint's lines stay in the Pod's log. */
export function podEnv(plan: SessionPlan): Record<string, string> {
  const { [entrypointLogEnvName]: _quiet, ...env } = containerEnvOf(plan);
  return { PATH: containerPath, HOME: containerHome, ...env };
}

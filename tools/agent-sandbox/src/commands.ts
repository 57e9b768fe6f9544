/**
 * The subcommands that print one JSON document and run nothing: plan, kube, hosts, doctor.
 */
import { ExitCode, ToolError } from '@agent-sandbox/shared';
import type { DoctorReport } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { Cores } from './cores.js';
import { loadRegistry, pickHost, probeSsh, readMachineId } from './hosts.js';
import { podManifest } from './kube-manifest.js';
import type { LaunchRequest } from './launch.js';
import {
  checkImage,
  checkKernelLog,
  checkLimitsEnforceable,
  checkNoNewPrivs,
  checkPodman,
  checkRecursion,
  checkSubuids,
  containmentMode,
  doctorCheck,
  readHostFacts,
} from './preflight.js';
import { runtimes } from './runtimes.js';
import { prepareHome } from './session-home.js';
import { composePlan, sessionIdentity, type SessionOptions } from './session.js';
import { homeOf, sessionOptionsOf } from './options.js';

function sessionOptions(request: LaunchRequest, env: NodeJS.ProcessEnv, user: string, host: string, kube: boolean): SessionOptions {
  if (kube && request.network !== 'none') {
    throw new ToolError('usage', 'bad-flag', `--network: a Pod has no podman network namespace to join; kube takes only "none", got ${JSON.stringify(request.network)}`);
  }
  return sessionOptionsOf(request, {
    env,
    tty: false,
    containment: kube ? 'kube' : containmentMode(readHostFacts(user)),
    host,
  });
}

/** The host the plan is for: local only (a remote node composes its own plan). */
async function localHost(request: LaunchRequest): Promise<string> {
  const machineId = readMachineId(request.machineIdFile);
  const registry = loadRegistry(request.registryFile, request.registryExplicit, machineId);
  const picked = await pickHost(registry, { ...(request.host ? { name: request.host } : {}), machineId });
  if (!picked.local) {
    throw new ToolError('usage', 'remote-plan', `host ${picked.host.name} is another node: run \`agent-sandbox plan\` there (its receiver composes the plan from its own files)`);
  }
  return picked.host.name;
}

/** `plan`: the composed session plan; stages nothing and starts nothing. */
export async function planCommand(request: LaunchRequest, cores: Cores, env: NodeJS.ProcessEnv, user: string) {
  checkRecursion(env);
  const host = await localHost(request);
  const plan = await composePlan(sessionOptions(request, env, user, host, false), cores, false);
  return {
    ok: true,
    ...sessionIdentity(plan),
    workspace: plan.layout.workspace,
    root: plan.layout.root,
    credentials: { identity: plan.credentials.identity, mounts: plan.credentials.mounts, install: plan.credentials.install },
    mounts: plan.mounts.mounts,
    workdir: plan.mounts.workdir,
    git: plan.mounts.git,
    command: plan.runPlan.command,
    runPlan: plan.runPlan,
    argv: plan.argv,
    // The values behind the launcher's own names in runPlan.env (git's safe.directory): not secrets.
    containerEnv: plan.containerEnv,
  };
}

/**
 * `kube`: the same plan as a Pod manifest (containment "kube"). Like a run, it stages the
 * credential copy (<root>/secrets/<id>, owned by uid 1000, which the hostPath volume names)
 * and hands the session home to uid 1000, so the manifest runs as printed; remove
 * <root>/secrets/<id> when the pod has ended. On a cluster the credential would be a Secret.
 */
export async function kubeCommand(request: LaunchRequest, cores: Cores, env: NodeJS.ProcessEnv, user: string) {
  checkRecursion(env);
  const host = await localHost(request);
  const plan = await composePlan(sessionOptions(request, env, user, host, true), cores, true);
  prepareHome(plan.layout.home, process.geteuid?.() ?? 0);
  return podManifest({
    sessionId: plan.sessionId,
    image: plan.image,
    command: plan.runPlan.command ?? [],
    workdir: plan.mounts.workdir,
    mounts: plan.mounts.mounts,
    limits: plan.limits,
    env: {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/sandbox/home',
      ...plan.containerEnv,
      AGENT_SANDBOX_SESSION: plan.sessionId,
    },
  });
}

/** `hosts`: the registry, which host is this machine, and which answer. */
export async function hostsCommand(registryFile: string, explicit: boolean, machineIdFile: string) {
  const machineId = readMachineId(machineIdFile);
  const registry = loadRegistry(registryFile, explicit, machineId);
  const hosts = [];
  for (const h of registry.hosts) {
    const local = h.machineId === machineId;
    const answer = local ? undefined : h.ssh ? await probeSsh(h.ssh.address, h.ssh.port ?? 22, 3000) : 'no ssh entry';
    hosts.push({ name: h.name, roles: h.roles, machineId: h.machineId, local, answers: local || answer === undefined, ...(answer ? { why: answer } : {}) });
  }
  return { ok: true, registry: registryFile, machineId, hosts, runtimes: Object.keys(runtimes) };
}

/** `doctor`: every preflight line for this node, from the same checks the run path uses. */
export async function doctorCommand(
  request: LaunchRequest,
  cores: Cores,
  env: NodeJS.ProcessEnv,
  user: string,
  runtimeGiven: boolean,
): Promise<DoctorReport & { exitCode: number }> {
  const facts = readHostFacts(user);
  const checks = [
    await doctorCheck('not inside a session', true, () => checkRecursion(env)),
    await doctorCheck('host', true, async () => `${await localHost(request)} (this machine)`),
    await doctorCheck('podman and OCI runtime', true, async () => `podman ${await checkPodman()}, runtime ${facts.runtime ?? 'default'}`),
    await doctorCheck('cgroup limits enforceable', true, () => {
      checkLimitsEnforceable(facts);
      return `cgroup ${facts.cgroup}, ${containmentMode(facts)}`;
    }),
    await doctorCheck('rootless subuids', true, () => (checkSubuids(facts), facts.euid === 0 ? 'not needed (root)' : 'present')),
    await doctorCheck('NoNewPrivs and user manager', true, async () => {
      const p = await cores.probe();
      const { reexec } = checkNoNewPrivs(p);
      return `NoNewPrivs ${p.noNewPrivs ? 1 : 0}${reexec ? ', handoff through systemd-run --user' : ', no handoff needed'}`;
    }),
    await doctorCheck('image present', true, async () => (await checkImage(request.image), request.image)),
    ...(await Promise.all(
      Object.keys(runtimes).map((runtime) =>
        doctorCheck(`credential ${runtime}`, runtimeGiven && runtime === request.runtime, async () => {
          const plan = await cores.planCredentials({ runtime, ...(request.account ? { account: request.account } : {}), home: homeOf(env) }, env);
          return `${(plan.identity as { path?: string } | undefined)?.path ?? 'staged'}`;
        }),
      ),
    )),
    await doctorCheck('kernel log (attribution)', false, async () => (await checkKernelLog(), 'readable')),
  ];
  const failed = checks.find((c) => c.required && !c.ok);
  return { ok: !failed, host: request.host ?? 'local', checks, exitCode: failed ? (failed.exitCode ?? ExitCode.internal) : 0 };
}

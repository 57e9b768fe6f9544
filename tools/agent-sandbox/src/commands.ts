/**
 * The subcommands that print one JSON document and run no agent: plan, kube, hosts, doctor.
 * plan and kube compose the same session plan as a run (session-prepare.ts), so what they
 * print is what a run would do.
 */
import { randomBytes } from 'node:crypto';
import { ExitCode, ToolError, cgroupMode } from '@agent-sandbox/shared';
import { runtimeNames } from '@agent-sandbox/shared/runtimes';
import type { DoctorReport } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { hostPreflight, realHostProbe, type HostProbe } from '@agent-sandbox/sandbox-run';
import { planCredentials, stageCredentials } from '@agent-sandbox/cred-stage';
import { prepareGitStore } from '@agent-sandbox/mount-plan';
import { podEnv, type SessionIdentity } from './compose.js';
import { loadRegistry, pickHost, probeSsh, readMachineId } from './hosts.js';
import { kubeManifest } from './kube-manifest.js';
import { brokerConfig, makeSocketDir } from './egress.js';
import { caRecord, stageCaFile } from './ca-file.js';
import { resolveLayout } from './layout.js';
import {
  checkKernelLog,
  checkLedgerWritable,
  checkNoNewPrivs,
  checkPodman,
  checkRecursion,
  checkStorageWritable,
  checkSubuids,
  containmentMode,
  diskCeiling,
  doctorCheck,
  probeNoNewPrivs,
  type NoNewPrivsState,
} from './preflight.js';
import { homeOf, type LaunchRequest } from './request.js';
import { composeSession } from './session-prepare.js';
import { prepareHome } from './session-home.js';
import { lockWorkspace } from './session-lock.js';
import { checkRoot, checkWorkspaces } from './doctor-root.js';

export interface CommandIo {
  env: NodeJS.ProcessEnv;
  user: string;
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

/** The session plan for a request, as a run would compose it (nothing staged, nothing started). */
async function planFor(request: LaunchRequest, io: CommandIo, containment: SessionIdentity['containment']) {
  checkRecursion(io.env);
  const host = await localHost(request);
  const layout = await resolveLayout(request.workspace, request.root);
  const facts = await hostPreflight(request.image, { checkImage: false });
  const identity: SessionIdentity = {
    runId: randomBytes(8).toString('hex'),
    sessionId: layout.sessionId,
    runtime: request.runtime,
    account: request.account ?? null,
    host,
    containment,
    image: request.image,
    limits: diskCeiling(request.limits, request.diskGiven, layout.root),
    startedAt: new Date().toISOString(),
  };
  return await composeSession(request, layout, identity, facts, { ...io, stdinIsTTY: false, stdoutIsTTY: false });
}

/** `plan`: the composed session plan; stages nothing and starts nothing. */
export async function planCommand(request: LaunchRequest, io: CommandIo) {
  const { plan } = await planFor(request, io, containmentMode());
  const { runId: _runId, startedAt: _startedAt, ...identity } = plan.identity;
  return {
    ok: true,
    ...identity,
    workspace: plan.layout.workspace,
    root: plan.layout.root,
    credentials: { identity: plan.credentials.identity, mounts: plan.credentials.mounts, install: plan.credentials.install },
    mounts: plan.allMounts,
    workdir: plan.mounts.workdir,
    git: plan.mounts.git,
    egress: { mode: plan.egress.mode, allow: plan.egress.allow, ...(plan.egress.ca ? { ca: caRecord(plan.egress.ca) } : {}) },
    command: plan.runPlan.command,
    runPlan: plan.runPlan,
    argv: plan.argv,
    // The values behind the launcher's own names in runPlan.env (git's safe.directory): not secrets.
    containerEnv: plan.containerEnv,
  };
}

/**
 * `kube`: the same plan as Kubernetes objects (containment "kube"): the Pod, a deny-all
 * NetworkPolicy and the node broker's ConfigMap (kube-manifest.ts). Like a run, it stages the
 * credential copy (<root>/secrets/<id>, owned by uid 1000, which the hostPath volume names) and
 * the --ca-file copy, hands the session home to uid 1000, makes the git-dir view and the
 * broker's socket directory, so the manifest runs as printed once the node's broker listens
 * there; when the pod has ended, remove <root>/secrets/<id> and the socket directory; the next
 * session in the workspace brings the pod's branch home from <root>/git-stores/<id> before it
 * starts. On a cluster the credential would be a Secret.
 * A workspace with a running session is refused (92) before anything is staged.
 */
export async function kubeCommand(request: LaunchRequest, io: CommandIo) {
  const { plan, stageInput } = await planFor(request, io, 'kube');
  if (request.network !== 'none') {
    throw new ToolError('usage', 'bad-flag', `--network: a Pod has no podman network namespace to join; kube takes only "none", got ${JSON.stringify(request.network)}`);
  }
  const lock = lockWorkspace(plan.layout.lockFile, plan.layout.recordFile, plan.layout.sessionId);
  try {
    await stageCredentials(stageInput, { env: io.env });
    if (plan.egress.ca) await stageCaFile(plan.egress.ca);
    prepareHome(plan.layout.home, process.geteuid?.() ?? 0);
    if (plan.mounts.gitStore) prepareGitStore(plan.mounts.gitStore, plan.layout.sessionId);
    if (plan.egress.socketDir) makeSocketDir(plan.egress.socketDir);
  } finally {
    lock.release();
  }
  const broker = brokerConfig(plan.egress, plan.layout.sessionId);
  return kubeManifest({
    sessionId: plan.layout.sessionId,
    ...(broker ? { broker } : {}),
    image: plan.identity.image,
    command: plan.runPlan.command ?? [],
    workdir: plan.mounts.workdir,
    mounts: plan.allMounts,
    limits: plan.identity.limits,
    env: podEnv(plan),
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
  return { ok: true, registry: registryFile, machineId, hosts, runtimes: runtimeNames };
}

/**
 * The host as the session's launcher will see it: where NoNewPrivs 1 is handed off through
 * systemd-run --user (a user manager is there), the launcher runs in the unit with NoNewPrivs 0,
 * so the host checks are made as that; otherwise as this process is.
 */
async function sessionProbe(noNewPrivs: Promise<NoNewPrivsState>): Promise<HostProbe> {
  const probe = realHostProbe();
  let handoff = false;
  try {
    handoff = checkNoNewPrivs(await noNewPrivs).reexec;
  } catch {
    handoff = false; // no user manager: the run refuses (84), and the line below says so
  }
  if (!handoff) return probe;
  return { ...probe, readFile: (file) => (file === '/proc/self/status' ? probe.readFile(file)?.replace(/^NoNewPrivs:\s*1$/m, 'NoNewPrivs:\t0') : probe.readFile(file)) };
}

/** `doctor`: every preflight line for this node, from the same checks the run path uses. */
export async function doctorCommand(request: LaunchRequest, io: CommandIo, runtimeGiven: boolean, rootGiven = false): Promise<DoctorReport & { exitCode: number }> {
  const euid = process.geteuid?.() ?? 0;
  // nnp-probe asks systemd-run and loginctl: once per report, for the host lines and its own line.
  const noNewPrivs = probeNoNewPrivs();
  const probe = await sessionProbe(noNewPrivs);
  const checks = [
    await doctorCheck('not inside a session', true, () => checkRecursion(io.env)),
    await doctorCheck('host', true, async () => `${await localHost(request)} (this machine)`),
    await doctorCheck('podman', true, async () => `podman ${await checkPodman()}`),
    await doctorCheck('cgroup limits enforceable and an OCI runtime', true, async () => {
      const facts = await hostPreflight(request.image, { checkImage: false, probe });
      return `cgroup ${facts.cgroupMode} (${facts.cgroupManager ?? 'cgroupfs'} manager), runtime ${facts.runtime ?? 'podman default'}, ${containmentMode(euid)}`;
    }),
    await doctorCheck('rootless subuids', true, () => (checkSubuids(euid, io.user), euid === 0 ? 'not needed (root)' : 'present')),
    await doctorCheck('NoNewPrivs and user manager', true, async () => {
      const state = await noNewPrivs;
      const { reexec } = checkNoNewPrivs(state);
      return `NoNewPrivs ${state.noNewPrivs ? 1 : 0}${reexec ? ', handoff through systemd-run --user' : ', no handoff needed'}`;
    }),
    await doctorCheck('image present', true, async () => (await hostPreflight(request.image, { probe }), request.image)),
    await doctorCheck("podman's storage writable", true, () => checkStorageWritable()),
    await doctorCheck('ledger writable', true, () => (checkLedgerWritable(request.ledgerFile), request.ledgerFile)),
    await doctorCheck('root', true, () => checkRoot(request.root, rootGiven, euid)),
    await doctorCheck('workspaces', false, () => checkWorkspaces(request.root, request.ledgerFile, rootGiven)),
    ...(await Promise.all(
      runtimeNames.map((runtime) =>
        doctorCheck(`credential ${runtime}`, runtimeGiven && runtime === request.runtime, async () => {
          const plan = await planCredentials({ runtime, ...(request.account ? { account: request.account } : {}), home: homeOf(io.env) }, { env: io.env });
          return plan.identity.path;
        }),
      ),
    )),
    await doctorCheck('kernel log (attribution on cgroup v1)', false, async () => {
      if (cgroupMode() === 'v2') return 'not needed (cgroup v2 counters)';
      await checkKernelLog();
      return 'readable';
    }),
  ];
  const failed = checks.find((c) => c.required && !c.ok);
  return { ok: !failed, host: request.host ?? 'local', checks, exitCode: failed ? (failed.exitCode ?? ExitCode.internal) : 0 };
}


/**
 * `doctor`: a readiness report for this node from the run path's own checks (session/preflight,
 * sandbox-run's host preflight, cred-stage's plan, the root's checks in root.ts): every line,
 * where a run stops at the first refusal. Exit 0 only when a session would start here.
 */
import { ExitCode, ToolError, cgroupMode, type CommandSpec } from '@agent-sandbox/shared';
import { runtimeNames } from '@agent-sandbox/shared/runtimes';
import type { DoctorReport } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { hostPreflight, realHostProbe, type HostProbe } from '@agent-sandbox/sandbox-run';
import { planCredentials } from '@agent-sandbox/cred-stage';
import { hostFor } from '../../dispatch/hosts.js';
import { sweepAbandoned } from '../../recovery/sweep.js';
import {
  checkKernelLog,
  checkLedgerWritable,
  checkNoNewPrivs,
  checkPodman,
  checkRecursion,
  checkStorageWritable,
  checkSubuids,
  containmentMode,
  doctorCheck,
  probeNoNewPrivs,
  type NoNewPrivsState,
} from '../../session/preflight.js';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import { DoctorOptions, DoctorOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { homeOf, pathDefaults } from '../../paths.js';
import { user } from '../entry.js';
import { checkRoot, checkWorkspaces } from './root.js';

/** What a report is asked about: doctor's options, and whether --hosts was given (a missing file is then refused). */
export type DoctorRequest = DoctorOptions & { registryExplicit: boolean };

export interface CommandIo {
  env: NodeJS.ProcessEnv;
  user: string;
}

/** The host the report is for: local only (a remote node reports on itself). */
async function localHost(request: DoctorRequest): Promise<string> {
  const picked = await hostFor(request);
  if (!picked.local)
    throw new ToolError('usage', 'remote-plan', `host ${picked.host.name} is another node: run \`agent-sandbox doctor\` there`);
  return picked.host.name;
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
  return {
    ...probe,
    readFile: (file) =>
      file === '/proc/self/status' ? probe.readFile(file)?.replace(/^NoNewPrivs:\s*1$/m, 'NoNewPrivs:\t0') : probe.readFile(file),
  };
}

/** `doctor`: every preflight line for this node, from the same checks the run path uses. */
export async function doctorReport(request: DoctorRequest, io: CommandIo, rootGiven = false): Promise<DoctorReport & { exitCode: number }> {
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
        doctorCheck(`credential ${runtime}`, runtime === request.runtime, async () => {
          const plan = await planCredentials(
            { runtime, ...(request.account ? { account: request.account } : {}), home: homeOf(io.env) },
            { env: io.env },
          );
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

export function doctorCommand(): CommandSpec {
  return {
    name: 'doctor',
    describe: 'readiness report for this node from the run path preflight; exit 0 only when a session would start',
    options: flagsOf(DoctorOptionsSchema),
    run: async (_i, ctx) => {
      const { root, ledgerFile, registryFile } = pathDefaults(ctx.env);
      const options = readOptions(DoctorOptions, DoctorOptionsSchema, ctx.options, { root, ledgerFile, registryFile });
      await sweepAbandoned(options.root, ctx.log).catch(() => []);
      const request: DoctorRequest = { ...options, registryExplicit: ctx.options['hosts'] !== undefined };
      const { exitCode, ...doc } = await doctorReport(request, { env: ctx.env, user: user() }, ctx.options['root'] !== undefined);
      if (options.json) return { output: doc, exitCode };
      for (const c of doc.checks) ctx.log(`${c.ok ? 'ok  ' : c.required ? 'FAIL' : 'warn'} ${c.name}: ${c.ok ? c.detail : c.remedy}`);
      ctx.log(doc.ok ? 'a session would start here' : 'a session would NOT start here');
      return { exitCode };
    },
  };
}

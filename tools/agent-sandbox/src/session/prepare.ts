/**
 * Preflight once, then compose: every check that can refuse a session runs here, before
 * anything is staged, chowned or started. The host (limits enforceable 88, a runtime 83, the
 * image 82, podman's storage 83, the ledger 83, room for the disk ceiling 88), the credential
 * (85: planned, not yet copied), the mounts (86, 87), --ca-file (86, 80: read and checked
 * here, copied at acquire) and the caches (--cache or the config file: 80, 86). Then the plan, composed purely.
 */
import { planCredentials } from '@agent-sandbox/cred-stage';
import { planMounts } from '@agent-sandbox/mount-plan';
import { hostPreflight, type RunFacts } from '@agent-sandbox/sandbox-run';
import { parseDuration } from '@agent-sandbox/shared/limits';
import type { CredStageStageInput } from '@agent-sandbox/shared/schemas/cred-stage';
import { composePlan, type SessionIdentity, type SessionPlan } from './compose.js';
import { resolveLayout, type SessionLayout } from '../workspace/layout.js';
import { checkLedgerWritable, checkStorageWritable, checkSubuids, diskCeiling } from './preflight.js';
import type { LaunchRequest } from './request.js';
import { installedPaths } from '../workspace/home.js';
import { egressPlanOf } from '../egress/broker.js';
import { publishPlanOf } from '../egress/publish.js';
import { recordedGitRoots } from '../workspace/record.js';
import { readCaFile } from '../egress/ca-file.js';
import { cachesAsked, planCaches } from './caches.js';

export interface PreparedSession {
  plan: SessionPlan;
  facts: RunFacts;
  stageInput: CredStageStageInput;
  /** Host paths of the credential copies the container installs in the home. */
  installed: string[];
}

export interface PrepareIo {
  env: NodeJS.ProcessEnv;
  user: string;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  /** Where a note goes (a cache asked for that the host does not have). */
  log?: (line: string) => void;
}

/** cred-stage's input for a session: staged under the session's own directory, valid for its whole timeout. */
export function stageInputFor(request: LaunchRequest, layout: SessionLayout, identity: SessionIdentity): CredStageStageInput {
  return {
    runtime: request.runtime,
    stageDir: layout.stageDir,
    sessionSeconds: parseDuration('--timeout', identity.limits.timeout),
    ...(request.account ? { account: request.account } : {}),
    ...(request.allowExpiring ? { allowExpiring: true } : {}),
  };
}

/**
 * Step 5: where the session lives (the layout, 86 outside the root) and the host's own checks,
 * which only read (limits enforceable 88, a runtime 83, the image 82, subordinate ids 83): they
 * come before the workspace's lock, so a host that cannot contain anything says so before
 * anything is created. `kube` and `plan` do not need the image here (kube's runs on a cluster
 * node; a plan is printed for it).
 */
export async function checkHost(
  request: LaunchRequest,
  io: PrepareIo,
  options: { checkImage: boolean },
): Promise<{ layout: SessionLayout; facts: RunFacts }> {
  const layout = await resolveLayout(request.workspace, request.root);
  const facts = await hostPreflight(request.image, { checkImage: options.checkImage });
  checkSubuids(process.geteuid?.() ?? 0, io.user);
  return { layout, facts };
}

/** The checks that need the workspace's lock held: they create the ledger or read the root's room. */
export function preflightSession(request: LaunchRequest, layout: SessionLayout): LaunchRequest['limits'] {
  checkLedgerWritable(request.ledgerFile);
  checkStorageWritable();
  return diskCeiling(request.limits, request.diskGiven, layout.root);
}

/** Plans the credential and the mounts (85, 86, 87) and composes the session plan. */
export async function composeSession(
  request: LaunchRequest,
  layout: SessionLayout,
  identity: SessionIdentity,
  facts: RunFacts,
  io: PrepareIo,
): Promise<PreparedSession> {
  const stageInput = stageInputFor(request, layout, identity);
  const credentials = await planCredentials(stageInput, { env: io.env });
  // A workspace made by `workspace new` brings its repository's common dir as a git root.
  const gitRoots = [...request.gitRoots, ...(await recordedGitRoots(layout.root, layout.sessionId, layout.workspace))];
  const mounts = await planMounts({
    workspace: layout.workspace,
    root: layout.root,
    sessionId: layout.sessionId,
    ...(gitRoots.length > 0 ? { gitRoots: [layout.root, ...gitRoots] } : {}),
  });
  const withAccount = { ...identity, account: credentials.identity.account };
  const tty = request.mode === 'run' && io.stdinIsTTY && io.stdoutIsTTY;
  const ca = request.caFile ? await readCaFile(request.caFile, layout.stageDir) : undefined;
  const egress = egressPlanOf(request, layout.sessionId, identity.runId, ca);
  const publish = publishPlanOf(request.publish, layout.sessionId);
  const caches = await planCaches(cachesAsked(request, io.env), io.env, layout.cacheLayerDir);
  for (const line of caches.skipped) io.log?.(line);
  const plan = composePlan({
    request,
    egress,
    publish,
    identity: withAccount,
    layout,
    credentials,
    mounts,
    caches,
    facts,
    env: io.env,
    tty,
  });
  return { plan, facts, stageInput, installed: installedPaths(layout.home, credentials.install) };
}

/** Step 7: the lock-held preflight, then compose: what every session does before acquiring anything (plan stops here). */
export async function prepareSession(
  request: LaunchRequest,
  layout: SessionLayout,
  identity: SessionIdentity,
  facts: RunFacts,
  io: PrepareIo,
): Promise<PreparedSession> {
  const limits = preflightSession(request, layout);
  return await composeSession(request, layout, { ...identity, limits }, facts, io);
}

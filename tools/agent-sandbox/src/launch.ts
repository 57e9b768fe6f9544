/**
 * The launcher's run path, shared by `run`, `exec` and the ssh receiver: recursion check,
 * host pick, then either a local session (preflight, compose, run) or dispatch over ssh.
 * Every path, refusals included, ends in one ledger line and, when asked, the verdict file.
 * There is no branch that runs the agent outside a container: the agent's argv only ever
 * travels inside the run plan given to sandbox-run.
 */
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ExitCode, ToolError, procStatusField, toErrorDocument } from '@agent-sandbox/shared';
import type { HostEntry, LedgerLine, SessionLimits, SessionRequest } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { Cores, NnpProbe, RunHooks } from './cores.js';
import { loadRegistry, pickHost, readMachineId } from './hosts.js';
import { appendLedger, ledgerExit } from './ledger.js';
import { checkImage, checkLimitsEnforceable, checkNoNewPrivs, checkRecursion, containmentMode, readHostFacts } from './preflight.js';
import type { Progress } from './progress.js';
import { checkStarted, composePlan, runComposed, sessionIdentity, type SessionOptions } from './session.js';
import { agentFields, sessionOptionsOf } from './options.js';
import { dispatchOverSsh } from './ssh-dispatch.js';

/** run: the agent owns the terminal; exec: output to a log, its path on stdout; receive: the ssh receiver (stdout passes through, no stdin). */
export type Mode = 'run' | 'exec' | 'receive';

export interface LaunchRequest {
  mode: Mode;
  runtime: SessionOptions['runtime'];
  workspace: string;
  root: string;
  account?: string;
  limits: SessionLimits;
  image: string;
  agentBin?: string;
  agentArgs: string[];
  /** The container's network: "none" or "ns:/run/netns/<name>" (local sessions only). */
  network: string;
  /** Stage an expiring credential anyway (cred-stage's allowExpiring); recorded in the ledger. */
  allowExpiring: boolean;
  /** More roots permitted for git metadata besides the root (--git-root; local sessions only). */
  gitRoots?: string[];
  host?: string;
  registryFile: string;
  registryExplicit: boolean;
  ledgerFile: string;
  resultFile?: string;
  logDir: string;
  machineIdFile: string;
  /** The launcher's own argv, for the systemd-run handoff (re-exec of this same command). */
  selfArgv: string[];
}

export interface LaunchIo {
  env: NodeJS.ProcessEnv;
  user: string;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  log: (line: string) => void;
  progress: Progress;
  /** exec mode: the bare log path goes here (the only thing on stdout). */
  printStdout: (text: string) => void;
}

export interface Verdict extends LedgerLine {}

/** Builds the ledger line / verdict every path ends with. */
function verdictLine(fields: Partial<LedgerLine> & Pick<LedgerLine, 'sessionId' | 'runtime' | 'host' | 'exitCode' | 'outcome' | 'reason' | 'startedAt'>): LedgerLine {
  return {
    version: 1,
    account: null,
    containment: null,
    image: '',
    limits: null,
    endedAt: new Date().toISOString(),
    peak: null,
    ...fields,
    exitCode: ledgerExit(fields.exitCode),
  };
}

/** Writes the ledger line and the result file; a failure to write either is reported, not hidden. */
export function recordVerdict(request: Pick<LaunchRequest, 'ledgerFile' | 'resultFile'>, line: LedgerLine, log: (l: string) => void): void {
  try {
    appendLedger(request.ledgerFile, line);
  } catch (err) {
    log(`agent-sandbox: could not write the ledger ${request.ledgerFile}: ${(err as Error).message}`);
  }
  if (request.resultFile) {
    try {
      mkdirSync(path.dirname(request.resultFile), { recursive: true });
      writeFileSync(request.resultFile, `${JSON.stringify(line)}\n`, { mode: 0o600 });
    } catch (err) {
      log(`agent-sandbox: could not write --result-file ${request.resultFile}: ${(err as Error).message}`);
    }
  }
}

/** A log file for exec mode: <logDir>/<sessionId>-<time>.log, opened exclusively (never a planted link). */
function openLog(logDir: string, sessionId: string) {
  mkdirSync(logDir, { recursive: true, mode: 0o700 });
  const file = path.join(logDir, `${sessionId}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
  closeSync(openSync(file, 'wx', 0o600));
  return { file, target: { file, append: true } as const };
}

function workspaceIdOf(workspace: string): string {
  return workspace.includes('/') ? path.basename(workspace) : workspace;
}

/**
 * The whole launch. Returns the exit status: the agent's own, unchanged, or ours (80..91)
 * with the cause on stderr, in the ledger and in --result-file.
 */
export async function launch(request: LaunchRequest, cores: Cores, io: LaunchIo): Promise<number> {
  const startedAt = new Date().toISOString();
  let hostName = 'unknown';
  let sessionId = workspaceIdOf(request.workspace);
  let containment: LedgerLine['containment'] = null;
  const base = { runtime: request.runtime, image: request.image, limits: request.limits, ...(request.account ? { account: request.account } : {}) };
  try {
    checkRecursion(io.env);
    const machineId = readMachineId(request.machineIdFile);
    const registry = loadRegistry(request.registryFile, request.registryExplicit, machineId);
    io.progress('agent-sandbox: picking a host');
    const picked = await pickHost(registry, { ...(request.host ? { name: request.host } : {}), machineId, onProgress: io.progress });
    hostName = picked.host.name;
    if (!picked.local) return await launchRemote(request, picked.host, io, { startedAt, sessionId });
    const facts = readHostFacts(io.user);
    containment = containmentMode(facts);
    const local = await runLocal(request, cores, io, { hostName, containment });
    sessionId = local.sessionId;
    recordVerdict(request, local.line, io.log);
    return local.exitCode;
  } catch (err) {
    const { document, exitCode } = toErrorDocument(err);
    if (exitCode === ExitCode.internal && err instanceof Error && err.stack) io.log(err.stack);
    io.log(`agent-sandbox: ${document.error.message}`);
    if (err instanceof ToolError && typeof err.detail?.['sessionId'] === 'string') sessionId = err.detail['sessionId'];
    recordVerdict(
      request,
      verdictLine({ ...base, sessionId, host: hostName, containment, startedAt, exitCode, outcome: 'refused', reason: document.error.code, message: document.error.message }),
      io.log,
    );
    return exitCode;
  }
}

interface LocalResult {
  exitCode: number;
  sessionId: string;
  line: LedgerLine;
}

/** A session on this machine: preflight, compose, run, attribute. Throws refusals. */
export async function runLocal(
  request: LaunchRequest,
  cores: Cores,
  io: LaunchIo,
  where: { hostName: string; containment: NonNullable<LedgerLine['containment']> },
): Promise<LocalResult> {
  const startedAt = new Date().toISOString();
  const probe = await probeNoNewPrivs(cores);
  const { reexec } = checkNoNewPrivs(probe);
  if (reexec) {
    // NoNewPrivs 1 with a working user manager: run this same command again through
    // systemd-run --user (nnp-probe owns the argv, escaping and exit mapping).
    io.progress('agent-sandbox: NoNewPrivs is 1; handing off through systemd-run --user');
    const exitCode = await cores.execWithHandoff(request.selfArgv);
    return {
      exitCode,
      sessionId: workspaceIdOf(request.workspace),
      line: verdictLine({ sessionId: workspaceIdOf(request.workspace), runtime: request.runtime, host: where.hostName, containment: where.containment, image: request.image, limits: request.limits, startedAt, exitCode, outcome: 'ran', reason: 'handoff', message: 'the session ran in a systemd-run --user handoff; its own ledger line follows' }),
    };
  }
  checkLimitsEnforceable(readHostFacts(io.user));
  const tty = request.mode === 'run' && io.stdinIsTTY && io.stdoutIsTTY;
  const options = sessionOptionsOf(request, { env: io.env, tty, containment: where.containment, host: where.hostName });
  io.progress(`agent-sandbox: checking image ${request.image}`);
  await checkImage(request.image);
  const plan = await composePlan(options, cores, true);
  let log: ReturnType<typeof openLog> | undefined;
  if (request.mode === 'exec') {
    log = openLog(request.logDir, plan.sessionId);
    io.printStdout(`${log.file}\n`);
  }
  io.progress(`agent-sandbox: starting session ${plan.sessionId}`);
  let run;
  try {
    const stdio: RunHooks['stdio'] = log ? ['ignore', log.target, log.target] : request.mode === 'receive' ? ['ignore', 'inherit', 'inherit'] : 'inherit';
    run = await runComposed(plan, cores, stdio, io.env);
  } catch (err) {
    if (err instanceof ToolError && err.detail?.['sessionId'] === undefined) {
      throw new ToolError(exitNameOf(err.exitCode), err.code, err.message, { ...(err.detail ?? {}), sessionId: plan.sessionId });
    }
    throw err;
  }
  checkStarted(run);
  const line = verdictLine({
    ...sessionIdentity(plan),
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    exitCode: run.exitCode,
    outcome: 'ran',
    reason: run.attribution.reason,
    evidence: {
      basis: run.attribution.evidence['basis'],
      noNewPrivs: probe.noNewPrivs,
      reexec: false,
      network: plan.runPlan.network,
      ...(plan.credentials.expiryOverride ? { expiryOverride: true } : {}),
      ...(run.interrupted ? { interrupted: run.interrupted } : {}),
    },
    peak: run.attribution.peak,
    ...(log ? { logPath: log.file } : {}),
  });
  return { exitCode: run.exitCode, sessionId: plan.sessionId, line };
}

/**
 * nnp-probe's full probe (it also asks systemd-run and loginctl about the user manager: two
 * processes) only when /proc/self/status says NoNewPrivs is not 0. With NoNewPrivs 0 there is
 * no handoff to make, so the user manager does not matter. Anything but a readable "0" takes
 * the full probe, which reports (or refuses) on its own.
 */
async function probeNoNewPrivs(cores: Cores): Promise<NnpProbe> {
  let status: string | undefined;
  try {
    status = procStatusField('NoNewPrivs', readFileSync('/proc/self/status', 'utf8'));
  } catch {
    status = undefined;
  }
  if (status === '0') return { ok: true, noNewPrivs: false, reexec: false, userManager: {} };
  return await cores.probe();
}

function exitNameOf(code: number) {
  const entry = Object.entries(ExitCode).find(([, c]) => c === code);
  return (entry?.[0] ?? 'internal') as keyof typeof ExitCode;
}

/** Dispatch to another node; only identities and paths cross, never a credential's bytes. */
async function launchRemote(
  request: LaunchRequest,
  host: HostEntry,
  io: LaunchIo,
  ctx: { startedAt: string; sessionId: string },
): Promise<number> {
  if (request.workspace.includes('/')) {
    throw new ToolError('usage', 'remote-workspace-path', `--workspace: a remote host (${host.name}) takes a workspace id under its own <root>/workspaces, not a local path (${request.workspace})`);
  }
  if (request.network !== 'none' || request.allowExpiring || request.gitRoots) {
    // None crosses ssh: a namespace is a node-local name, the node's own credential policy
    // decides about expiring tokens, and which directories may be mounted is the node's call.
    throw new ToolError('usage', 'local-only-flag', `--network, --allow-expiring and --git-root apply to sessions on this machine only, not on ${host.name}`);
  }
  const sessionRequest: SessionRequest = {
    version: 1,
    nodeMachineId: host.machineId,
    runtime: request.runtime,
    workspaceId: request.workspace,
    ...agentFields(request),
  };
  let log: ReturnType<typeof openLog> | undefined;
  if (request.mode === 'exec') {
    log = openLog(request.logDir, ctx.sessionId);
    io.printStdout(`${log.file}\n`);
  }
  io.progress(`agent-sandbox: dispatching to ${host.name} over ssh`);
  const result = await dispatchOverSsh(host, sessionRequest, { stdout: log ? log.target : 'inherit', stderr: io.log });
  if (!result.started) {
    const code = result.exitCode === 255 ? ExitCode.unreachable : result.exitCode;
    const err =
      result.exitCode === 255
        ? new ToolError('unreachable', 'ssh-failed', `ssh to ${host.name} failed before the remote side started: ${result.stderrTail.split('\n').slice(-2).join(' | ') || 'no message'}`)
        : undefined;
    if (err) throw err;
    // The receiver refused before accepting (usage, wrong node): its status stands.
    recordVerdict(
      request,
      verdictLine({ sessionId: ctx.sessionId, runtime: request.runtime, host: host.name, image: request.image, limits: request.limits, startedAt: ctx.startedAt, exitCode: code, outcome: 'refused', reason: 'receiver-refused', message: result.stderrTail.split('\n').pop() ?? '' }),
      io.log,
    );
    return code;
  }
  const v = (result.verdict ?? {}) as Partial<LedgerLine>;
  const exitCode = result.exitCode === 255 && v.exitCode !== undefined ? v.exitCode : result.exitCode;
  recordVerdict(
    request,
    verdictLine({
      sessionId: v.sessionId ?? ctx.sessionId,
      runtime: request.runtime,
      account: v.account ?? request.account ?? null,
      host: host.name,
      containment: v.containment ?? null,
      image: request.image,
      limits: request.limits,
      startedAt: ctx.startedAt,
      exitCode,
      outcome: v.outcome ?? 'ran',
      reason: v.reason ?? 'unknown',
      ...(v.message ? { message: v.message } : {}),
      peak: v.peak ?? null,
      ...(v.evidence ? { evidence: v.evidence } : {}),
      ...(log ? { logPath: log.file } : {}),
      remote: { ...(v.remote ?? {}), via: 'ssh', verdict: result.verdict ? 'received' : 'missing' },
    }),
    io.log,
  );
  return exitCode;
}

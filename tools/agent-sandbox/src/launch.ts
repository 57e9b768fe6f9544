/**
 * The launcher's one forward path, shared by `run`, `exec` and the ssh receiver:
 *
 *   request -> sweep -> host pick -> layout -> lock -> preflight -> compose -> record + sentinel
 *     -> acquire (stage, home, cgroup) -> run -> attribute -> release -> one ledger line
 *
 * Every path, refusals included, ends in exactly one ledger line and, when asked, the verdict
 * file. There is no branch that runs the agent outside a container: the agent's argv only ever
 * travels inside the run plan given to sandbox-run.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ExitCode } from '@agent-sandbox/shared';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import type { RunHooks } from '@agent-sandbox/sandbox-run';
import { execWithHandoff, realDeps } from '@agent-sandbox/nnp-probe';
import { acquire } from './acquire.js';
import { describeGitAudit, type GitAudit } from './git-audit.js';
import { describeEgress, egressSocketDir } from './egress.js';
import { sessionEnd } from './session-end.js';
import type { EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';
import { clearEntrypointLog, takeEntrypointLog, type TakenLog } from './entrypoint-log.js';
import { describePlanted } from './session-home.js';
import { openExecLog } from './exec-log.js';
import type { SessionIdentity } from './compose.js';
import { reach } from './faults.js';
import { loadRegistry, pickHost, readMachineId } from './hosts.js';
import { resolveLayout, workspaceIdOf, type SessionLayout } from './layout.js';
import { checkNoNewPrivs, checkRecursion, containmentMode, probeNoNewPrivs } from './preflight.js';
import type { LaunchIo } from './launch-io.js';
import { launchRemote } from './remote.js';
import type { LaunchRequest } from './request.js';
import { runSession, type SessionRun } from './run-session.js';
import { applyRetention } from './retention.js';
import { preflightHost, prepareSession, type PreparedSession } from './session-prepare.js';
import { lockWorkspace, writeRecord } from './session-lock.js';
import type { SessionRecord } from './session-record.js';
import { startSentinel } from './sentinel.js';
import { sweepAbandoned } from './sweep.js';
import { ranLine, recordVerdict, refusedLine, type SessionEnd } from './verdict.js';


/** Who the session is before anything was resolved (what a refusal's line can say). */
function requestIdentity(request: LaunchRequest, host: string): SessionIdentity {
  return {
    runId: randomBytes(8).toString('hex'),
    sessionId: workspaceIdOf(request.workspace),
    runtime: request.runtime,
    account: request.account ?? null,
    host,
    containment: null,
    image: request.image,
    limits: request.limits,
    startedAt: new Date().toISOString(),
  };
}

/**
 * The whole launch. Returns the exit status: the agent's own, unchanged, or ours (80..92)
 * with the cause on stderr, in the ledger and in --result-file.
 */
export async function launch(request: LaunchRequest, io: LaunchIo): Promise<number> {
  let identity = requestIdentity(request, io.host ?? 'unknown');
  const targets = { ledgerFile: request.ledgerFile, ...(request.resultFile ? { resultFile: request.resultFile } : {}) };
  try {
    await sweepAbandoned(request.root, io.log).catch(() => []);
    checkRecursion(io.env);
    if (!io.host) {
      const machineId = readMachineId(request.machineIdFile);
      const registry = loadRegistry(request.registryFile, request.registryExplicit, machineId);
      io.progress('agent-sandbox: picking a host');
      const picked = await pickHost(registry, { ...(request.host ? { name: request.host } : {}), machineId, onProgress: io.progress });
      identity = { ...identity, host: picked.host.name };
      if (!picked.local) return await launchRemote(request, picked.host, io, identity);
    }
    const nnp = await probeNoNewPrivs();
    if (checkNoNewPrivs(nnp).reexec) {
      // NoNewPrivs 1 with a working user manager: run this same command again through
      // systemd-run --user; the session's own ledger line is written by the launcher there.
      io.progress('agent-sandbox: NoNewPrivs is 1; handing off through systemd-run --user');
      return await execWithHandoff(request.selfArgv, realDeps());
    }
    identity = { ...identity, containment: containmentMode() };
    return await launchLocal(request, io, identity, targets, nnp.noNewPrivs);
  } catch (err) {
    return refuse(identity, err, targets, io);
  }
}

/** A refusal before the launch began (the receiver's, while taking the work that follows a request): the session's one line. */
export function refuseRequest(request: LaunchRequest, err: unknown, io: LaunchIo): number {
  const targets = { ledgerFile: request.ledgerFile, ...(request.resultFile ? { resultFile: request.resultFile } : {}) };
  return refuse(requestIdentity(request, io.host ?? 'unknown'), err, targets, io);
}

function refuse(identity: SessionIdentity, err: unknown, targets: { ledgerFile: string; resultFile?: string }, io: LaunchIo): number {
  const { line, exitCode, message } = refusedLine(identity, err, { ...(io.remote ? { remote: io.remote } : {}), ...(io.work ? { work: io.work } : {}) });
  if (exitCode === ExitCode.internal && err instanceof Error && err.stack) io.log(err.stack);
  io.log(`agent-sandbox: ${forTerminal(message)}`);
  const written = recordVerdict(targets, line, io.log);
  io.onVerdict?.(written);
  return exitCode;
}


function stdioFor(request: LaunchRequest, logFile: string | undefined): NonNullable<RunHooks['stdio']> {
  if (logFile) return ['ignore', { file: logFile, append: true }, { file: logFile, append: true }];
  return request.mode === 'receive' ? ['ignore', 'inherit', 'inherit'] : 'inherit';
}

/** A session on this machine, from the layout on. Returns the exit status; every path writes one line. */
async function launchLocal(request: LaunchRequest, io: LaunchIo, base: SessionIdentity, targets: { ledgerFile: string; resultFile?: string }, noNewPrivs: boolean): Promise<number> {
  const layout = await resolveLayout(request.workspace, request.root);
  let identity = { ...base, sessionId: layout.sessionId };
  io.progress(`agent-sandbox: checking this host and image ${request.image}`);
  const facts = await preflightHost(request, io);
  // The receiver takes the lock itself when it carries work (it holds it from the bundle to the commits' return).
  const lock = io.lock ?? lockWorkspace(layout.lockFile, layout.recordFile, layout.sessionId);
  const record = recordOf(request, layout, identity, io);
  let sentinel: ReturnType<typeof startSentinel> | undefined;
  try {
    // From here on a launcher that dies leaves a record: its sentinel, or the next launcher
    // start, removes what the session made and writes its one ledger line.
    writeRecord(layout.recordFile, record);
    sentinel = startSentinel(layout.recordFile, layout.root, lock);
    await reach(io.faults, 'locked');
    const prepared = await prepareSession(request, layout, identity, facts, io);
    identity = prepared.plan.identity;
    writeRecord(layout.recordFile, Object.assign(record, { installed: prepared.installed, line: lineFields(identity) }));
    const run = await runPrepared(request, prepared, record, io, noNewPrivs);
    const line = ranLine(identity, run.end);
    const written = recordVerdict(targets, line, io.log);
    io.onVerdict?.(written);
    return run.exitCode;
  } catch (err) {
    return refuse(identity, err, targets, io);
  } finally {
    rmSync(layout.recordFile, { force: true });
    sentinel?.release();
    if (!io.lock) lock.release();
    keepRetention(request.ledgerFile, io.log);
  }
}

/** The per-session logs beside the ledger, past the retention, go at every session's end (retention.ts). */
function keepRetention(ledgerFile: string, log: (line: string) => void): void {
  try {
    applyRetention(path.dirname(ledgerFile));
  } catch (err) {
    log(`agent-sandbox: could not apply the retention to ${path.dirname(ledgerFile)}: ${(err as Error).message}`);
  }
}

function lineFields(identity: SessionIdentity): SessionRecord['line'] {
  return { runtime: identity.runtime, account: identity.account, containment: identity.containment, image: identity.image, limits: identity.limits };
}

function recordOf(request: LaunchRequest, layout: SessionLayout, identity: SessionIdentity, io: LaunchIo): SessionRecord {
  return {
    version: 1,
    runId: identity.runId,
    sessionId: layout.sessionId,
    pid: process.pid,
    user: io.user,
    host: identity.host,
    mode: request.mode,
    startedAt: identity.startedAt,
    containerName: layout.containerName,
    ledgerFile: request.ledgerFile,
    ...(request.resultFile ? { resultFile: request.resultFile } : {}),
    line: lineFields(identity),
    stageDir: layout.stageDir,
    home: layout.home,
    installed: [],
    egressDir: egressSocketDir(layout.sessionId),
  };
}

/** Acquire, run, attribute, release: the part of a session that holds host resources. */
async function runPrepared(
  request: LaunchRequest,
  prepared: PreparedSession,
  record: SessionRecord,
  io: LaunchIo,
  noNewPrivs: boolean,
): Promise<{ exitCode: number; end: SessionEnd }> {
  const { plan } = prepared;
  const update = (change: Partial<SessionRecord>) => writeRecord(plan.layout.recordFile, Object.assign(record, change));
  const acquired = await acquire({
    layout: plan.layout,
    stageInput: prepared.stageInput,
    installed: prepared.installed,
    mounts: plan.mounts,
    egress: plan.egress,
    env: io.env,
    log: io.log,
    ...(io.faults ? { faults: io.faults } : {}),
    onParent: (cgroupParent, cidfile) => update({ cgroupParent, cidfile }),
  });
  let run: SessionRun;
  let audit: GitAudit;
  let egress: EgressSummary | undefined;
  let logPath: string | undefined;
  let taken: TakenLog;
  try {
    if (request.mode === 'exec') {
      logPath = openExecLog(request.logDir, plan.layout.sessionId);
      io.printStdout(`${logPath}\n`);
    }
    io.progress(`agent-sandbox: starting session ${plan.layout.sessionId}`);
    clearEntrypointLog(plan.layout.home);
    run = await runSession(plan, acquired, prepared.facts, {
      stdio: stdioFor(request, logPath),
      env: io.env,
      log: io.log,
      ...(io.stop ? { stop: io.stop } : {}),
      onSpawn: (pid) => pid && update({ podmanPid: pid }),
      ...(logPath ? { alsoCounted: [logPath] } : {}),
      ...(io.faults ? { faults: io.faults } : {}),
    });
    audit = await acquired.git.finish();
    egress = await acquired.egress.stop();
  } finally {
    taken = takeEntrypointLog(plan.layout.home);
    await acquired.release();
  }
  const { entrypoint } = taken;
  const planted = [...taken.planted, ...acquired.planted];
  for (const line of [...describeGitAudit(audit), ...describeEgress(egress)]) io.log(line);
  const plantedLine = describePlanted(plan.layout.sessionId, planted);
  if (plantedLine) io.log(plantedLine);
  if (run.stopped) io.log(`agent-sandbox: session ${plan.layout.sessionId} was stopped: ${forTerminal(run.stopped)}`);
  return {
    exitCode: run.exitCode,
    end: sessionEnd(run, audit, plan, { noNewPrivs, planted, ...(egress ? { egress } : {}), ...(logPath ? { logPath } : {}), ...(entrypoint ? { entrypoint } : {}), ...(io.remote ? { remote: io.remote } : {}), ...(io.work ? { work: io.work } : {}) }),
  };
}

export type { LaunchIo };

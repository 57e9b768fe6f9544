/**
 * Acquire, run, release (steps 8-10 of launch.ts): the part of a session that holds host
 * resources. What it takes (acquire.ts: the staged credential, the home's copies, the git
 * store, the broker, the parent cgroup) is given back in reverse on every path; between, the
 * container runs under its stop sources (run.ts). Then what the session left is read and said
 * on stderr: what came home from its git store, what the broker refused, the links it planted
 * where the launcher cleans up, why the launcher stopped it, and (--verbose) the entrypoint's
 * own words. Returns the agent's exit status and how the session ended, for its ledger line.
 */
import type { RunHooks } from '@agent-sandbox/sandbox-run';
import type { EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';
import { parseSize } from '@agent-sandbox/shared/limits';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { collectStartGarbage } from '@agent-sandbox/shared/start-garbage';
import { describeEgress } from '../egress/broker.js';
import { describeGitAudit, type GitAudit } from '../git/audit.js';
import type { SessionEnd } from '../ledger/verdict.js';
import type { Hold } from '../recovery/hold.js';
import { describePlanted } from '../workspace/home.js';
import { acquire, type Acquired } from './acquire.js';
import { sessionEnd } from './end.js';
import { clearEntrypointLog, entrypointWords, takeEntrypointLog, type TakenLog } from './entrypoint-log.js';
import { openExecLog } from './exec-log.js';
import type { LaunchIo } from './launch-io.js';
import type { PreparedSession } from './prepare.js';
import type { LaunchRequest } from './request.js';
import { runSession, type SessionRun } from './run.js';

/** The agent's stdio: exec's log file, the receiver's ssh channel (stdin is the connection), or the terminal. */
function stdioFor(request: LaunchRequest, logFile: string | undefined): NonNullable<RunHooks['stdio']> {
  if (logFile) return ['ignore', { file: logFile, append: true }, { file: logFile, append: true }];
  return request.mode === 'receive' ? ['ignore', 'inherit', 'inherit'] : 'inherit';
}

/** What the session left, on stderr: each line names what the user should look at. */
function sayWhatWasLeft(
  sessionId: string,
  run: SessionRun,
  audit: GitAudit,
  egress: EgressSummary | undefined,
  taken: TakenLog,
  planted: Parameters<typeof describePlanted>[1],
  io: LaunchIo,
): void {
  for (const line of entrypointWords(taken.entrypoint)) io.progress(`agent-sandbox: in the container: ${line}`);
  for (const line of [...describeGitAudit(audit), ...describeEgress(egress)]) io.log(line);
  const plantedLine = describePlanted(sessionId, planted);
  if (plantedLine) io.log(plantedLine);
  if (run.stopped) io.log(`agent-sandbox: session ${sessionId} was stopped: ${forTerminal(run.stopped)}`);
}

/** Step 8: what the session holds on the host; the hold records the cgroup and cidfile as soon as they exist, for a sweep after a crash. */
function acquireFor(prepared: PreparedSession, hold: Hold, io: LaunchIo): Promise<Acquired> {
  const { plan } = prepared;
  return acquire({
    layout: plan.layout,
    stageInput: prepared.stageInput,
    installed: prepared.installed,
    mounts: plan.mounts,
    diskBytes: parseSize('--disk', plan.identity.limits.disk),
    egress: plan.egress,
    publish: plan.publish,
    allMounts: plan.allMounts,
    env: io.env,
    log: io.log,
    ...(io.faults ? { faults: io.faults } : {}),
    onParent: (cgroupParent, cidfile) => hold.update({ cgroupParent, cidfile }),
  });
}

/** Step 9: the container runs; the hold follows podman's pid and the disk walks, so a sweep or `ps` sees them. */
function runContainer(
  request: LaunchRequest,
  prepared: PreparedSession,
  acquired: Acquired,
  hold: Hold,
  io: LaunchIo,
  logPath: string | undefined,
): Promise<SessionRun> {
  return runSession(prepared.plan, acquired, prepared.facts, {
    stdio: stdioFor(request, logPath),
    env: io.env,
    log: io.log,
    ...(io.stop ? { stop: io.stop } : {}),
    ...(io.stopGrace ? { stopGrace: io.stopGrace } : {}),
    onSpawn: (pid) => pid && hold.update({ podmanPid: pid }),
    onDiskWalk: (u) =>
      hold.update({
        disk: {
          bytes: u.writtenBytes,
          files: u.writtenFiles,
          limitBytes: u.limitBytes,
          limitFiles: u.limitFiles,
          at: new Date().toISOString(),
        },
      }),
    ...(logPath ? { alsoCounted: [logPath] } : {}),
    ...(io.faults ? { faults: io.faults } : {}),
    onSettled: () => void collectStartGarbage(),
  });
}

export async function containSession(
  request: LaunchRequest,
  prepared: PreparedSession,
  hold: Hold,
  io: LaunchIo,
  noNewPrivs: boolean,
): Promise<{ exitCode: number; end: SessionEnd }> {
  const { plan } = prepared;
  io.progress(`agent-sandbox: staging the credential, the home, the git store, the broker and the cgroup of ${plan.layout.sessionId}`);
  const acquired = await acquireFor(prepared, hold, io);
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
    run = await runContainer(request, prepared, acquired, hold, io, logPath);
    io.progress(
      `agent-sandbox: the container ended (exit ${run.exitCode}, ${forTerminal(run.reason)}); bringing the git store home and stopping the broker`,
    );
    audit = await acquired.git.finish();
    egress = await acquired.egress.stop();
  } finally {
    taken = takeEntrypointLog(plan.layout.home);
    await acquired.release();
  }
  const planted = [...taken.planted, ...acquired.planted];
  sayWhatWasLeft(plan.layout.sessionId, run, audit, egress, taken, planted, io);
  const { entrypoint } = taken;
  return {
    exitCode: run.exitCode,
    end: sessionEnd(run, audit, plan, {
      noNewPrivs,
      planted,
      ...(egress ? { egress } : {}),
      ...(logPath ? { logPath } : {}),
      ...(entrypoint ? { entrypoint } : {}),
      ...(io.node?.line ?? {}),
    }),
  };
}

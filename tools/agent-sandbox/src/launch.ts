/**
 * The launcher's one forward path, shared by `run`, `exec` and the ssh receiver; `plan` and
 * `kube` run its first steps with the same functions and stop before acquiring anything. The
 * sequence is:
 *
 *   1. sweep what dead sessions left                           recovery/sweep.ts
 *   2. refuse a launcher inside a session                      session/preflight.ts
 *   3. pick the host; another node: dispatch the session there dispatch/hosts.ts, dispatch/remote.ts
 *   4. NoNewPrivs 1: hand this same command to systemd-run     session/preflight.ts (nnp-probe)
 *   5. the layout and the host's own checks (no lock yet)      session/prepare.ts checkHost
 *   6. hold the workspace: lock, record, sentinel              recovery/hold.ts
 *   7. the checks that need the lock; plan and compose         session/prepare.ts prepareSession
 *   8. acquire: credential, home, git store, broker, cgroup    session/contain.ts, acquire.ts
 *   9. run the container, watch it, attribute its end          session/run.ts
 *  10. release in reverse; read what the session left          session/contain.ts, end.ts
 *  11. one ledger line, and the last stderr line in words      ledger/verdict.ts, ledger/describe.ts
 *
 * Every path, refusals included, ends in exactly one ledger line and, when asked, the verdict
 * file. There is no branch that runs the agent outside a container: the agent's argv only ever
 * travels inside the run plan given to sandbox-run.
 */
import path from 'node:path';
import { ExitCode } from '@agent-sandbox/shared';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import type { ContainmentMode, LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { ToolError } from '@agent-sandbox/shared';
import { execWithHandoff, realDeps } from '@agent-sandbox/nnp-probe';
import { hostFor, type PickedHost } from './dispatch/hosts.js';
import { launchRemote } from './dispatch/remote.js';
import { egressSocketDir } from './egress/broker.js';
import { describeEnd } from './ledger/describe.js';
import { applyRetention } from './ledger/retention.js';
import { ranLine, recordVerdict, refusedLine, type SessionIdentity } from './ledger/verdict.js';
import { holdWorkspace, type Hold } from './recovery/hold.js';
import { sweepAbandoned } from './recovery/sweep.js';
import { containSession } from './session/contain.js';
import { openLive, stopSignal } from './session/live.js';
import { reach } from './session/faults.js';
import { sessionIdentity } from './session/identity.js';
import type { LaunchIo } from './session/launch-io.js';
import { checkNoNewPrivs, checkRecursion, containmentMode, probeNoNewPrivs } from './session/preflight.js';
import { checkHost, prepareSession, type PreparedSession } from './session/prepare.js';
import type { LaunchRequest } from './session/request.js';
import type { SessionLayout } from './workspace/layout.js';
import type { SessionRecord } from './workspace/session-record.js';

/**
 * The whole launch. Returns the exit status: the agent's own, unchanged, or ours (80..92)
 * with the cause on stderr, in the ledger and in --result-file.
 */
export async function launch(request: LaunchRequest, io: LaunchIo): Promise<number> {
  let identity = sessionIdentity(request, io.node?.host ?? 'unknown');
  try {
    const picked = await whereToRun(request, io); // 1-3
    identity = { ...identity, host: picked.host.name };
    if (!picked.local) return await launchRemote(request, picked.host, io, identity);
    const nnp = await probeNoNewPrivs(); // 4
    if (checkNoNewPrivs(nnp).reexec) {
      // The session's own ledger line is written by the launcher in the systemd-run unit.
      io.progress('agent-sandbox: NoNewPrivs is 1; handing off through systemd-run --user');
      return await execWithHandoff(request.selfArgv, realDeps());
    }
    return await launchLocal(request, io, { ...identity, containment: containmentMode() }, nnp.noNewPrivs);
  } catch (err) {
    return refuse(identity, err, request, io);
  }
}

/** Steps 1-3: sweep, refuse recursion, pick the host (the receiver's node was picked by its client). */
async function whereToRun(request: LaunchRequest, io: LaunchIo): Promise<PickedHost> {
  await sweepAbandoned(request.root, io.log).catch(() => []);
  checkRecursion(io.env);
  if (io.node) return { host: { name: io.node.host, roles: [], machineId: '' }, local: true, skipped: [] };
  return await hostFor(request, io.progress);
}

/** Steps 5-11 on this machine. Returns the exit status; every path writes one line, then says how it ended. */
async function launchLocal(request: LaunchRequest, io: LaunchIo, base: SessionIdentity, noNewPrivs: boolean): Promise<number> {
  io.progress(`agent-sandbox: checking this host and image ${request.image}`);
  const { layout, facts } = await checkHost(request, io, { checkImage: true }); // 5
  let identity = { ...base, sessionId: layout.sessionId };
  // `agent-sandbox stop` and `shell` reach the session through its launcher from here on (session/live.ts).
  const live = openLive(layout, io);
  let hold: Hold;
  try {
    hold = holdWorkspace(layout, recordOf(request, layout, identity, io), io.node?.lock); // 6
  } catch (err) {
    live.close();
    throw err;
  }
  live.held();
  let exitCode: number;
  let line: LedgerLine | undefined;
  try {
    await reach(io.faults, 'locked');
    io.progress(`agent-sandbox: planning the credential, the mounts and the network of session ${layout.sessionId}`);
    const prepared = await prepareSession(request, layout, identity, facts, io); // 7
    identity = prepared.plan.identity;
    const { egress, publish } = prepared.plan;
    hold.update({
      installed: prepared.installed,
      line: lineFields(identity),
      egress: { mode: egress.mode, ...(egress.logPath ? { log: egress.logPath } : {}) },
      published: publish.ports,
    });
    const ran = await containSession(request, prepared, hold, live.io, noNewPrivs); // 8-10
    exitCode = ran.exitCode;
    line = recordVerdict(targetsOf(request), ranLine(identity, live.finish(ran.end)), io.log); // 11
    io.node?.onVerdict(line);
  } catch (err) {
    exitCode = refuse(identity, err, request, io);
  } finally {
    hold.release();
    live.close();
    keepRetention(request.ledgerFile, io.log);
  }
  if (line && !io.node) io.log(describeEnd(line));
  return exitCode;
}

/**
 * What `plan` and `kube` print: steps 1-3, 5 and 7 of a run, by the same functions (so a plan
 * is what a run does), stopping before the workspace is held or anything is acquired. A remote
 * host is refused: its receiver composes the plan from its own files.
 */
export async function planSession(
  request: LaunchRequest,
  io: LaunchIo,
  containment: ContainmentMode = containmentMode(),
): Promise<PreparedSession> {
  const picked = await whereToRun(request, io);
  if (!picked.local) {
    throw new ToolError(
      'usage',
      'remote-plan',
      `host ${picked.host.name} is another node: run \`agent-sandbox plan\` there (its receiver composes the plan from its own files)`,
    );
  }
  const { layout, facts } = await checkHost(request, io, { checkImage: false });
  const identity = { ...sessionIdentity(request, picked.host.name, containment), sessionId: layout.sessionId };
  return await prepareSession(request, layout, identity, facts, { ...io, stdinIsTTY: false, stdoutIsTTY: false });
}

/** A refusal: the cause on stderr (the last line), the session's one ledger line, the exit code. */
function refuse(identity: SessionIdentity, err: unknown, request: LaunchRequest, io: LaunchIo): number {
  const { line, exitCode, message } = refusedLine(identity, err, io.node?.line ?? {});
  if (exitCode === ExitCode.internal && err instanceof Error && err.stack) io.log(err.stack);
  const written = recordVerdict(targetsOf(request), line, io.log);
  io.node?.onVerdict(written);
  io.log(`agent-sandbox: ${forTerminal(message)}`);
  return exitCode;
}

/** A refusal before the launch began (the receiver's, while taking the work that follows a request): the session's one line. */
export function refuseRequest(request: LaunchRequest, err: unknown, io: LaunchIo): number {
  return refuse(sessionIdentity(request, io.node?.host ?? 'unknown'), err, request, io);
}

function targetsOf(request: LaunchRequest): { ledgerFile: string; resultFile?: string } {
  return { ledgerFile: request.ledgerFile, ...(request.resultFile ? { resultFile: request.resultFile } : {}) };
}

/** The per-session logs beside the ledger, past the retention, go at every session's end (ledger/retention.ts). */
function keepRetention(ledgerFile: string, log: (line: string) => void): void {
  try {
    applyRetention(path.dirname(ledgerFile));
  } catch (err) {
    log(`agent-sandbox: could not apply the retention to ${path.dirname(ledgerFile)}: ${(err as Error).message}`);
  }
}

function lineFields(identity: SessionIdentity): SessionRecord['line'] {
  return {
    runtime: identity.runtime,
    account: identity.account,
    containment: identity.containment,
    image: identity.image,
    limits: identity.limits,
  };
}

/** The record a sweep reads when this launcher died: who ran, where, and what it made (filled in as it goes). */
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
    stopSignal,
  };
}

export type { LaunchIo };

/**
 * Dispatch to another node: only identities and paths cross, never a credential's bytes. The
 * node's receiver runs the same forward path as a local run and returns its verdict; the
 * ledger line here records it (host, remote verdict) as this launch's one line.
 */
import { ExitCode, ToolError } from '@agent-sandbox/shared';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import type { HostEntry } from '@agent-sandbox/shared/schemas/agent-sandbox-hosts';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { WorkTransfer } from '@agent-sandbox/shared/schemas/workspace';
import type { LaunchIo } from '../session/launch-io.js';
import { sessionRequestOf, type LaunchRequest } from '../session/request.js';
import { dispatchOverSsh, type DispatchResult } from './ssh.js';
import { nodeRefusal, readNodeVerdict, type NodeVerdict } from './node-answer.js';
import { bringBack, prepareWork, type CarriedWork } from './carry-work.js';
import { openExecLog } from '../session/exec-log.js';
import { describeEnd } from '../ledger/describe.js';
import { ranLine, recordVerdict, refusedLine, type SessionIdentity, type VerdictTargets } from '../ledger/verdict.js';

function checkDispatchable(request: LaunchRequest, host: HostEntry): void {
  if (request.workspace.includes('/')) {
    throw new ToolError(
      'usage',
      'remote-workspace-path',
      `--workspace: a remote host (${host.name}) takes a workspace id under its own <root>/workspaces, not a local path (${request.workspace})`,
    );
  }
  if (
    request.network !== 'none' ||
    request.allowExpiring ||
    request.gitRoots.length > 0 ||
    request.allowHosts.length > 0 ||
    request.egress !== 'runtime' ||
    request.caFile ||
    request.publish.length > 0 ||
    request.caches?.length
  ) {
    // None crosses ssh: a namespace is a node-local name, the node's own credential policy
    // decides about expiring tokens, and which directories may be mounted is the node's call.
    // The node also decides what its sessions reach: its own broker, its own allowlist.
    // A cache is this machine's directory; the node's own config says which of its caches its sessions get.
    throw new ToolError(
      'usage',
      'local-only-flag',
      `--network, --egress, --allow-host, --ca-file, --publish, --cache, --allow-expiring and --git-root apply to sessions on this machine only, not on ${host.name}`,
    );
  }
}

export async function launchRemote(request: LaunchRequest, host: HostEntry, io: LaunchIo, identity: SessionIdentity): Promise<number> {
  checkDispatchable(request, host);
  // A workspace made here travels with the session (and is locked here until its commits are back).
  const work = await prepareWork(request);
  try {
    return await dispatch(request, host, io, identity, work);
  } finally {
    work?.release();
  }
}

async function dispatch(
  request: LaunchRequest,
  host: HostEntry,
  io: LaunchIo,
  identity: SessionIdentity,
  work: CarriedWork | undefined,
): Promise<number> {
  if (work) io.progress(`agent-sandbox: sending ${work.offer.branch} (${work.sent.bytes} bytes) to ${host.name}`);
  const targets = { ledgerFile: request.ledgerFile, ...(request.resultFile ? { resultFile: request.resultFile } : {}) };
  const logPath = request.mode === 'exec' ? openExecLog(request.logDir, identity.sessionId) : undefined;
  if (logPath) io.printStdout(`${logPath}\n`);
  io.progress(`agent-sandbox: dispatching to ${host.name} over ssh`);
  const result = await dispatchOverSsh(host, sessionRequestOf(request, host.machineId, work?.offer), {
    stdout: logPath ? { file: logPath, append: true } : 'inherit',
    stderr: io.log,
    ...(work ? { payload: work.bundleFile } : {}),
  });
  if (!result.started) return refusedBeforeStart(result, host, identity, targets, io);
  const answer = readNodeVerdict(result.verdict);
  if (answer.state === 'invalid')
    io.log(`agent-sandbox: ${host.name}'s verdict is not a ledger line (${forTerminal(answer.problem)}); its fields are not used`);
  const v: Partial<LedgerLine> = answer.state === 'received' ? answer.line : {};
  const transfer = work ? await bringBack(work, host, answer.state === 'received' ? v : undefined) : undefined;
  if (transfer?.fetched === 'fast-forward')
    io.progress(`agent-sandbox: ${transfer.branch} advanced to ${transfer.returned?.tip.slice(0, 12)} with the session's commits`);
  if (transfer?.message) io.log(`agent-sandbox: ${forTerminal(transfer.message)}`);
  const exitCode = result.exitCode === 255 && v.exitCode !== undefined ? v.exitCode : result.exitCode;
  const line = remoteLine(identity, v, answer.state, { exitCode, logPath, transfer });
  const written = recordVerdict(targets, v.outcome === 'refused' ? { ...line, outcome: 'refused' } : line, io.log);
  io.log(describeEnd(written));
  return exitCode;
}

/** The receiver never started the session: ssh itself failed (255, thrown), or the receiver refused (usage, wrong node, busy) and its code and status stand. */
function refusedBeforeStart(
  result: DispatchResult,
  host: HostEntry,
  identity: SessionIdentity,
  targets: VerdictTargets,
  io: LaunchIo,
): number {
  if (result.exitCode === 255) {
    throw new ToolError(
      'unreachable',
      'ssh-failed',
      `ssh to ${host.name} failed before the remote side started: ${result.stderrTail.split('\n').slice(-2).join(' | ') || 'no message'}`,
    );
  }
  const err = nodeRefusal(result.refusal, host.name, result.stderrTail);
  recordVerdict(
    targets,
    { ...refusedLine(identity, err).line, exitCode: result.exitCode <= 255 ? result.exitCode : ExitCode.internal },
    io.log,
  );
  return result.exitCode;
}

/** This launch's one ledger line: the node's fields where its verdict has them, this side's identity and defaults where not. */
function remoteLine(
  identity: SessionIdentity,
  v: Partial<LedgerLine>,
  verdict: NodeVerdict['state'],
  local: { exitCode: number; logPath: string | undefined; transfer: WorkTransfer | undefined },
): LedgerLine {
  const { exitCode, logPath, transfer } = local;
  return ranLine(
    { ...identity, account: v.account ?? identity.account, containment: v.containment ?? null, ...(v.limits ? { limits: v.limits } : {}) },
    {
      exitCode,
      endedAt: new Date().toISOString(),
      reason: v.reason ?? 'unknown',
      ...(v.message ? { message: v.message } : {}),
      evidence: v.evidence ?? {},
      peak: v.peak ?? null,
      ...(logPath ? { logPath } : {}),
      remote: { ...(v.remote ?? {}), via: 'ssh', verdict, ...(v.runId ? { runId: v.runId } : {}) },
      ...(transfer ? { work: transfer } : {}),
      ...(v.entrypoint ? { entrypoint: v.entrypoint } : {}),
    },
  );
}

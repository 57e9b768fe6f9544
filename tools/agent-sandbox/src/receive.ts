/**
 * The node's one path for a client's request: `agent-sandbox receive`, the forced command of
 * the dispatch key (authorized_keys: `restrict,command="agent-sandbox receive ..."`), whatever
 * the client asked to execute (SSH_ORIGINAL_COMMAND is ignored). The sequence is:
 *
 *   1. read the request line; refuse one for another node (90)  dispatch/receive-request.ts
 *   2. a return request: the commits of a session it ran        dispatch/serve-return.ts
 *   3. a live request: list, stop or enter a running session    dispatch/serve-live.ts
 *   4. a session request: take the workspace's lock, then the
 *      work that follows the request (exactly the announced bytes) dispatch/receive-work.ts
 *   5. the session, through the same forward path as a local run launch.ts
 *   6. collect the work the session made, for the client        dispatch/receive-work.ts
 *   7. the verdict line back to the client                       dispatch/ssh.ts (its tags)
 *
 * The client keeps stdin open for the whole session: end of file means the connection is gone
 * (the dispatching launcher or its ssh was killed), and the session is stopped, with reason
 * "abandoned". A refusal at any step is the node's error on stderr, tagged with its code for the
 * client (dispatch/node-answer.ts); from step 4 on it is also the session's one ledger line.
 */
import { isToolError } from '@agent-sandbox/shared';
import type { LedgerLine, SessionRequest } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { WorkTransfer } from '@agent-sandbox/shared/schemas/workspace';
import type { HeldLock } from '@agent-sandbox/shared/flock';
import { guardPath } from '@agent-sandbox/path-guard';
import { hostName, readMachineId } from './dispatch/hosts.js';
import { refusalLine } from './dispatch/node-answer.js';
import { acceptRequest, isLive, type Channel, type ReceiverConfig } from './dispatch/receive-request.js';
import { acceptWork, collectWork, type AcceptedWork } from './dispatch/receive-work.js';
import { serveLive } from './dispatch/serve-live.js';
import { serveReturn } from './dispatch/serve-return.js';
import { receiverStartedTag, receiverVerdictTag } from './dispatch/ssh.js';
import { launch, refuseRequest } from './launch.js';
import { sweepAbandoned } from './recovery/sweep.js';
import type { LaunchIo, NodeLaunch } from './session/launch-io.js';
import { makeProgress } from './session/progress.js';
import { requestOfSession } from './session/request.js';
import { layoutFor } from './workspace/layout.js';
import { lockWorkspace } from './workspace/lock.js';

export type { Channel, ReceiverConfig };

/** Runs one received request; returns the exit status (the agent's, or ours). */
export async function receive(channel: Channel, config: ReceiverConfig, io: LaunchIo): Promise<number> {
  try {
    const machineId = readMachineId(config.machineIdFile);
    const request = acceptRequest(await channel.firstLine(), machineId); // 1
    if (request.kind === 'return') return await serveReturn(request, config.root, config.stdout()); // 2
    if (isLive(request))
      return await serveLive(request, config.root, { stdout: config.stdout(), log: io.log, env: io.env, input: channel }); // 3
    return await receiveSession(channel, request, config, io, machineId);
  } catch (err) {
    // The client reads the code from this line (stdout carries the agent's output); the CLI still
    // reports the error as usual.
    if (isToolError(err)) io.log(refusalLine(err));
    throw err;
  } finally {
    channel.close();
  }
}

/** Steps 4-7 for a session request. */
async function receiveSession(
  channel: Channel,
  request: SessionRequest,
  config: ReceiverConfig,
  io: LaunchIo,
  machineId: string,
): Promise<number> {
  io.log(`${receiverStartedTag}${request.workspaceId}`);
  const launchRequest = requestOfSession(request, {
    root: config.root,
    ledgerFile: config.ledgerFile,
    machineIdFile: config.machineIdFile,
    env: io.env,
  });
  const host = hostName();
  let verdict: LedgerLine | undefined;
  const node: NodeLaunch = { host, line: { remote: { machineId, host } }, onVerdict: (line) => (verdict = line) };
  // --verbose: the node's progress and the entrypoint's words, through ssh to the client's stderr.
  const sessionIo: LaunchIo = { ...io, progress: makeProgress(launchRequest.verbose, io.log), stop: channel.closed, node };
  let taken: Taken | undefined;
  if (request.work) {
    try {
      taken = await takeWork(channel, request, config); // 4
    } catch (err) {
      const exitCode = refuseRequest(launchRequest, err, {
        ...sessionIo,
        node: { ...node, line: { ...node.line, work: { branch: request.work.branch } } },
      });
      io.log(`${receiverVerdictTag}${JSON.stringify(verdict ?? {})}`); // 7
      return exitCode;
    }
    node.lock = taken.lock;
    node.line.work = taken.accepted.transfer;
  }
  let work: WorkTransfer | undefined;
  let exitCode: number;
  try {
    exitCode = await launch(launchRequest, sessionIo); // 5
    if (taken) work = await collectOrSay(taken.accepted, verdict); // 6
  } finally {
    taken?.lock.release();
  }
  io.log(`${receiverVerdictTag}${JSON.stringify({ ...(verdict ?? {}), ...(work ? { work } : {}) })}`); // 7
  return exitCode;
}

interface Taken {
  lock: HeldLock;
  accepted: AcceptedWork;
}

/** Step 4: the workspace's lock, then the work that follows the request; a refusal releases the lock. */
async function takeWork(channel: Channel, request: SessionRequest, config: ReceiverConfig): Promise<Taken> {
  const root = (await guardPath({ path: config.root, root: config.root, kind: 'directory' })).resolved;
  await sweepAbandoned(root, () => undefined).catch(() => []);
  const layout = layoutFor(root, request.workspaceId);
  const lock = lockWorkspace(layout.lockFile, layout.recordFile, layout.sessionId, 'receiving a dispatched workspace');
  try {
    return { lock, accepted: await acceptWork(channel, request.work!, root, request.workspaceId, config.bundleMaxBytes) };
  } catch (err) {
    lock.release();
    throw err;
  }
}

/** Step 6: the session's work for the client; when it cannot be collected, the transfer says why. */
async function collectOrSay(accepted: AcceptedWork, verdict: LedgerLine | undefined): Promise<WorkTransfer> {
  return await collectWork(accepted, verdict?.runId, verdict?.gitReturn?.sideRef ?? undefined).catch((err: Error) => ({
    ...accepted.transfer,
    message: `the node could not collect the session's work: ${err.message}`,
  }));
}

/**
 * The node side of ssh dispatch: `agent-sandbox receive`, installed as the forced command of
 * the dispatch key (authorized_keys: `restrict,command="agent-sandbox receive ..."`). The key
 * can do three things: hand a session request to the same forward path as a local `run`, fetch
 * the commits a session it ran added (`{"kind":"return",...}`, serve-return.ts), and list or
 * stop the node's running sessions (`{"kind":"ps"|"stop",...}`, serve-live.ts). What
 * the client asked to execute (SSH_ORIGINAL_COMMAND) is ignored. A request naming another
 * node's machine-id is refused (90).
 *
 * The request is the first line on stdin. When it carries work (a bundle of the workspace's
 * branch), exactly the announced bytes follow (receive-work.ts). The client keeps stdin open
 * for the whole session: end of file means the connection is gone (the dispatching launcher or
 * its ssh was killed), and the session is stopped, with reason "abandoned".
 */
import { ToolError, isToolError, parseJsonDocument, validateDocument } from '@agent-sandbox/shared';
import { SessionRequest, type LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { LiveRequest, ReturnRequest, type WorkTransfer } from '@agent-sandbox/shared/validators/workspace';
import { guardPath } from '@agent-sandbox/path-guard';
import { hostName, readMachineId } from '../../dispatch/hosts.js';
import { launch, refuseRequest } from '../../launch.js';
import type { LaunchIo } from '../../session/launch-io.js';
import { layoutFor } from '../../workspace/layout.js';
import { makeProgress } from '../../session/progress.js';
import { requestOfSession } from '../../session/request.js';
import { acceptWork, collectWork, type AcceptedWork, type ByteSource } from '../../dispatch/receive-work.js';
import { serveReturn } from '../../dispatch/serve-return.js';
import { serveLive } from '../../dispatch/serve-live.js';
import type { HeldLock } from '@agent-sandbox/shared/flock';
import { lockWorkspace } from '../../workspace/lock.js';
import { receiverStartedTag, receiverVerdictTag } from '../../dispatch/ssh.js';
import { refusalLine } from '../../dispatch/node-answer.js';
import { sweepAbandoned } from '../../recovery/sweep.js';

export interface ReceiverConfig {
  root: string;
  ledgerFile: string;
  machineIdFile: string;
  /** The largest bundle this node reads (receive --bundle-max). */
  bundleMaxBytes: number;
  /** Where a return request's bundle goes (the process's stdout). */
  stdout: () => NodeJS.WritableStream;
}

/** The client's side of the channel: the request's line, the bytes after it, and a signal for the end of the connection. */
export interface Channel extends ByteSource {
  firstLine: () => Promise<string>;
  closed: AbortSignal;
  /** Stops watching the connection (the receiver is done). */
  close: () => void;
}

/** Parses and checks a request; refusals before acceptance are 80 (malformed) or 90 (wrong node). */
export function acceptRequest(text: string, machineId: string): SessionRequest | ReturnRequest | LiveRequest {
  const doc = parseJsonDocument(text, 'request');
  const kind = typeof doc === 'object' && doc !== null ? (doc as { kind?: unknown }).kind : undefined;
  const request =
    kind === 'return' ? validateDocument(ReturnRequest, doc, 'request') : kind === 'ps' || kind === 'stop' || kind === 'shell' ? validateDocument(LiveRequest, doc, 'request') : validateDocument(SessionRequest, doc, 'request');
  if (request.nodeMachineId !== machineId) {
    throw new ToolError('policy', 'wrong-node', `request is meant for node ${request.nodeMachineId}, this node is ${machineId}; refused`);
  }
  return request;
}

/** Runs one received request; returns the exit status (the agent's, or ours). */
export async function receive(channel: Channel, config: ReceiverConfig, io: LaunchIo): Promise<number> {
  try {
    return await receiveOn(channel, config, io);
  } catch (err) {
    // The dispatcher reads the code from this line (the error document itself goes to stdout,
    // which carries the agent's output); the CLI still reports the error as usual.
    if (isToolError(err)) io.log(refusalLine(err));
    throw err;
  } finally {
    channel.close();
  }
}

/** Takes the workspace's lock and the work that follows the request; a refusal is the session's one line (80, 92, ...). */
async function takeWork(channel: Channel, request: SessionRequest, config: ReceiverConfig): Promise<{ lock: HeldLock; accepted: AcceptedWork }> {
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

const isLive = (request: { kind?: string }): request is LiveRequest => request.kind === 'ps' || request.kind === 'stop' || request.kind === 'shell';

async function receiveOn(channel: Channel, config: ReceiverConfig, io: LaunchIo): Promise<number> {
  const machineId = readMachineId(config.machineIdFile);
  const request = acceptRequest(await channel.firstLine(), machineId);
  if (request.kind === 'return') return await serveReturn(request, config.root, config.stdout());
  if (isLive(request)) return await serveLive(request, config.root, { stdout: config.stdout(), log: io.log, env: io.env, input: channel });
  io.log(`${receiverStartedTag}${request.workspaceId}`);
  const host = hostName();
  const launchRequest = requestOfSession(request, { root: config.root, ledgerFile: config.ledgerFile, machineIdFile: config.machineIdFile, env: io.env });
  let verdict: LedgerLine | undefined;
  // --verbose: the node's progress and the entrypoint's words, through ssh to the client's stderr.
  const sessionIo: LaunchIo = { ...io, progress: makeProgress(launchRequest.verbose, io.log), host, stop: channel.closed, remote: { machineId, host }, onVerdict: (line) => (verdict = line) };
  let taken: { lock: HeldLock; accepted: AcceptedWork } | undefined;
  let work: WorkTransfer | undefined;
  let exitCode: number;
  try {
    if (request.work) {
      try {
        taken = await takeWork(channel, request, config);
      } catch (err) {
        exitCode = refuseRequest(launchRequest, err, { ...sessionIo, work: { branch: request.work.branch } });
        io.log(`${receiverVerdictTag}${JSON.stringify(verdict ?? {})}`);
        return exitCode;
      }
    }
    exitCode = await launch(launchRequest, { ...sessionIo, ...(taken ? { lock: taken.lock, work: taken.accepted.transfer } : {}) });
    if (taken) {
      work = await collectWork(taken.accepted, verdict?.runId, verdict?.gitReturn?.sideRef ?? undefined).catch((err: Error) => ({ ...taken!.accepted.transfer, message: `the node could not collect the session's work: ${err.message}` }));
    }
  } finally {
    taken?.lock.release();
  }
  io.log(`${receiverVerdictTag}${JSON.stringify({ ...(verdict ?? {}), ...(work ? { work } : {}) })}`);
  return exitCode;
}

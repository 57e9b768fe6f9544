/**
 * The node side of ssh dispatch: `agent-sandbox receive`, installed as the forced command of
 * the dispatch key (authorized_keys: `restrict,command="agent-sandbox receive ..."`). The key
 * can do one thing: hand a session request to the same forward path as a local `run`. What the
 * client asked to execute (SSH_ORIGINAL_COMMAND) is ignored. A request naming another node's
 * machine-id is refused (90).
 *
 * The request is the first line on stdin; the client keeps stdin open for the whole session.
 * End of file on stdin means the connection is gone (the dispatching launcher or its ssh was
 * killed): the session is stopped, with reason "abandoned", instead of running on unattended.
 */
import { ToolError, parseJsonDocument, validateDocument } from '@agent-sandbox/shared';
import { SessionRequest } from '@agent-sandbox/shared/validators/agent-sandbox';
import { hostName, readMachineId } from './hosts.js';
import { launch } from './launch.js';
import type { LaunchIo } from './launch-io.js';
import type { LaunchRequest } from './request.js';
import { receiverStartedTag, receiverVerdictTag } from './ssh-dispatch.js';

export interface ReceiverConfig {
  root: string;
  ledgerFile: string;
  logDir: string;
  machineIdFile: string;
}

/** The client's side of the channel: the request's line, and a signal for the end of the connection. */
export interface Channel {
  firstLine: () => Promise<string>;
  closed: AbortSignal;
  /** Stops watching the connection (the receiver is done). */
  close: () => void;
}

/** Parses and checks a request; refusals before acceptance are 80 (malformed) or 90 (wrong node). */
export function acceptRequest(text: string, machineId: string): SessionRequest {
  const request = validateDocument(SessionRequest, parseJsonDocument(text, 'request'), 'request');
  if (request.nodeMachineId !== machineId) {
    throw new ToolError('policy', 'wrong-node', `request is meant for node ${request.nodeMachineId}, this node is ${machineId}; refused`);
  }
  return request;
}

function launchRequestOf(request: SessionRequest, config: ReceiverConfig): LaunchRequest {
  return {
    mode: 'receive',
    runtime: request.runtime,
    workspace: request.workspaceId,
    root: config.root,
    ...(request.account ? { account: request.account } : {}),
    limits: request.limits,
    diskGiven: true,
    image: request.image,
    ...(request.agentBin ? { agentBin: request.agentBin } : {}),
    agentArgs: request.agentArgs,
    network: 'none',
    // The node decides what its sessions reach: the runtime's own list, through its own broker.
    egress: 'runtime',
    allowHosts: [],
    allowExpiring: false,
    gitRoots: [],
    registryFile: '/dev/null',
    registryExplicit: false,
    ledgerFile: config.ledgerFile,
    logDir: config.logDir,
    machineIdFile: config.machineIdFile,
    selfArgv: [],
  };
}

/** Runs one received request; returns the exit status (the agent's, or ours). */
export async function receive(channel: Channel, config: ReceiverConfig, io: LaunchIo): Promise<number> {
  try {
    return await receiveOn(channel, config, io);
  } finally {
    channel.close();
  }
}

async function receiveOn(channel: Channel, config: ReceiverConfig, io: LaunchIo): Promise<number> {
  const machineId = readMachineId(config.machineIdFile);
  const request = acceptRequest(await channel.firstLine(), machineId);
  io.log(`${receiverStartedTag}${request.workspaceId}`);
  let verdict: unknown;
  const host = hostName();
  const exitCode = await launch(launchRequestOf(request, config), {
    ...io,
    host,
    stop: channel.closed,
    remote: { machineId, host },
    onVerdict: (line) => {
      verdict = line;
    },
  });
  io.log(`${receiverVerdictTag}${JSON.stringify(verdict ?? {})}`);
  return exitCode;
}

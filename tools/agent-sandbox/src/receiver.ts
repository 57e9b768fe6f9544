/**
 * The node side of ssh dispatch: `agent-sandbox receive`, installed as the forced command
 * of the dispatch key (authorized_keys: `restrict,command="agent-sandbox receive ..."`).
 * The key can do one thing: hand a session request (JSON on stdin) to the same validation
 * and run path as a local `run`. What the client asked to execute (SSH_ORIGINAL_COMMAND)
 * is ignored. A request naming another node's machine-id is refused (90).
 */
import { validateDocument, parseJsonDocument, ToolError, toErrorDocument } from '@agent-sandbox/shared';
import { SessionRequest, type LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import type { Cores } from './cores.js';
import { readMachineId, hostName } from './hosts.js';
import { recordVerdict, runLocal, type LaunchIo, type LaunchRequest } from './launch.js';
import { agentFields } from './options.js';
import { checkRecursion, containmentMode, readHostFacts } from './preflight.js';
import { receiverStartedTag, receiverVerdictTag } from './ssh-dispatch.js';

export interface ReceiverConfig {
  root: string;
  ledgerFile: string;
  logDir: string;
  machineIdFile: string;
}

/** Parses and checks a request; refusals before acceptance are 80 (malformed) or 90 (wrong node). */
export function acceptRequest(text: string, machineId: string): SessionRequest {
  const request = validateDocument(SessionRequest, parseJsonDocument(text, 'request'), 'request');
  if (request.nodeMachineId !== machineId) {
    throw new ToolError('policy', 'wrong-node', `request is meant for node ${request.nodeMachineId}, this node is ${machineId}; refused`);
  }
  return request;
}

/** Runs one received request; returns the exit status (the agent's, or ours). */
export async function receive(stdinText: string, config: ReceiverConfig, cores: Cores, io: LaunchIo): Promise<number> {
  const startedAt = new Date().toISOString();
  const machineId = readMachineId(config.machineIdFile);
  const request = acceptRequest(stdinText, machineId);
  io.log(`${receiverStartedTag}${request.workspaceId}`);
  const launchRequest: LaunchRequest = {
    mode: 'receive',
    runtime: request.runtime,
    workspace: request.workspaceId,
    root: config.root,
    ...agentFields(request),
    network: 'none',
    allowExpiring: false,
    registryFile: '/dev/null',
    registryExplicit: false,
    ledgerFile: config.ledgerFile,
    logDir: config.logDir,
    machineIdFile: config.machineIdFile,
    selfArgv: [],
  };
  const host = hostName();
  let line: LedgerLine;
  let exitCode: number;
  try {
    checkRecursion(io.env);
    const containment = containmentMode(readHostFacts(io.user));
    const local = await runLocal(launchRequest, cores, io, { hostName: host, containment });
    line = { ...local.line, remote: { machineId, host } };
    exitCode = local.exitCode;
  } catch (err) {
    const { document, exitCode: code } = toErrorDocument(err);
    io.log(`agent-sandbox receive: ${document.error.message}`);
    exitCode = code;
    line = {
      version: 1,
      sessionId: request.workspaceId,
      runtime: request.runtime,
      account: request.account ?? null,
      host,
      containment: null,
      image: request.image,
      limits: request.limits,
      startedAt,
      endedAt: new Date().toISOString(),
      exitCode: code,
      outcome: 'refused',
      reason: document.error.code,
      message: document.error.message,
      peak: null,
      remote: { machineId, host },
    };
  }
  recordVerdict({ ledgerFile: config.ledgerFile }, line, io.log);
  io.log(`${receiverVerdictTag}${JSON.stringify(line)}`);
  return exitCode;
}

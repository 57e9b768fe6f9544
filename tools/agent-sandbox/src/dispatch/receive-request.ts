/**
 * What a dispatch node reads first: the client's request, one JSON line, checked before anything
 * else is done (80 when it is not a request, 90 when it is meant for another node), and the
 * channel it came on and the node's own configuration (the receive command's flags). The node's
 * driver (receive.ts) does the rest.
 */
import { ToolError, parseJsonDocument, validateDocument } from '@agent-sandbox/shared';
import { SessionRequest } from '@agent-sandbox/shared/validators/agent-sandbox';
import { LiveRequest, ReturnRequest } from '@agent-sandbox/shared/validators/workspace';
import type { ByteSource } from './receive-work.js';

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

export type NodeRequest = SessionRequest | ReturnRequest | LiveRequest;

/** A request for the node's running sessions: list, stop or enter one. */
export const isLive = (request: { kind?: string }): request is LiveRequest =>
  request.kind === 'ps' || request.kind === 'stop' || request.kind === 'shell';

/** Parses and checks a request; refusals before acceptance are 80 (malformed) or 90 (wrong node). */
export function acceptRequest(text: string, machineId: string): NodeRequest {
  const doc = parseJsonDocument(text, 'request');
  const kind = typeof doc === 'object' && doc !== null ? (doc as { kind?: unknown }).kind : undefined;
  const request =
    kind === 'return'
      ? validateDocument(ReturnRequest, doc, 'request')
      : isLive({ kind: String(kind) })
        ? validateDocument(LiveRequest, doc, 'request')
        : validateDocument(SessionRequest, doc, 'request');
  if (request.nodeMachineId !== machineId) {
    throw new ToolError('policy', 'wrong-node', `request is meant for node ${request.nodeMachineId}, this node is ${machineId}; refused`);
  }
  return request;
}

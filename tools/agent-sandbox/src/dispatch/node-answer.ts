/**
 * What a node says back over ssh, read as untrusted input: its refusal before it accepted a
 * request (the code and message of its own error document), and its verdict after a session.
 * A node is another machine: a code that is not in our table, or a verdict that is not a
 * ledger line, is named as such rather than trusted.
 */
import { ToolError, errorCodes, exitName, type ErrorCode } from '@agent-sandbox/shared';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';

/** The receiver's tagged line for a refusal before it accepted: `{"code","exitCode","message"}`. */
export const receiverRefusedTag = 'agent-sandbox-receiver: refused ';

/** The line a receiver writes when it refuses (any ToolError it meets before a verdict). */
export function refusalLine(err: ToolError): string {
  return `${receiverRefusedTag}${JSON.stringify({ code: err.code, exitCode: err.exitCode, message: err.message })}`;
}

/** Longest node message kept: a refusal names a cause in one line. */
const messageMax = 1024;

/**
 * The node's refusal as our own error: its code and exit when the pair is one of our table's,
 * else `receiver-refused` with what it said. The message is made safe for a terminal and cut.
 */
export function nodeRefusal(refusal: Record<string, unknown> | undefined, hostName: string, stderrTail: string): ToolError {
  const said = typeof refusal?.['message'] === 'string' ? refusal['message'] : (stderrTail.split('\n').pop() ?? 'refused');
  const message = `${hostName} refused: ${forTerminal(said.slice(0, messageMax))}`;
  const code = refusal?.['code'];
  const exit = typeof refusal?.['exitCode'] === 'number' ? exitName(refusal['exitCode']) : undefined;
  if (typeof code === 'string' && exit && Object.hasOwn(errorCodes, code) && Object.hasOwn(errorCodes[code as ErrorCode], exit)) {
    return new ToolError(exit as never, code as never, message, { node: hostName });
  }
  return new ToolError('usage', 'receiver-refused', message, { node: hostName });
}

export type NodeVerdict = { state: 'received'; line: LedgerLine } | { state: 'missing' } | { state: 'invalid'; problem: string };

/** The node's verdict checked against the ledger line's schema (the node writes exactly one). */
export function readNodeVerdict(verdict: Record<string, unknown> | undefined): NodeVerdict {
  if (verdict === undefined) return { state: 'missing' };
  if (LedgerLine(verdict)) return { state: 'received', line: verdict };
  const error = LedgerLine.errors?.[0];
  return { state: 'invalid', problem: `${error?.instancePath || '/'} ${error?.message ?? 'does not match the ledger line'}` };
}

/**
 * The session ledger: one JSON line per session (schema agent-sandbox.ledger-line) appended
 * to its own file, default ${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl
 * (flag --ledger; paths.ts). Never stdout: stdout belongs to the agent. Written on every path,
 * refusals included; a line is one write(2) with O_APPEND, so concurrent sessions interleave
 * whole lines.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { validateDocument } from '@agent-sandbox/shared';
import { withBytesAsEscapes } from '@agent-sandbox/shared/byte-names';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { boundLine } from './bound.js';
import { rotateLedger } from './rotate.js';

export type { LedgerLine };

/**
 * The line as it is written: names' bytes that are not UTF-8 as `\xNN` text (shared/byte-names:
 * a lone surrogate is not JSON every parser reads), then cut to under 64 KiB when it is over
 * (bound.ts). The ledger, the result file, a node's verdict and `--json` all carry this line.
 */
export function boundedLedgerLine(line: LedgerLine): LedgerLine {
  return boundLine(withBytesAsEscapes(line), (l) => LedgerLine(l));
}

/**
 * Bounds the line (under 64 KiB), validates it against its schema (a bad line is a bug, 91),
 * and appends it; returns what was written.
 */
export function appendLedger(file: string, line: LedgerLine): LedgerLine {
  const bounded = validateDocument(LedgerLine, boundedLedgerLine(line), 'ledger');
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  rotateLedger(file, Buffer.byteLength(JSON.stringify(bounded)) + 1);
  appendFileSync(file, `${JSON.stringify(bounded)}\n`, { mode: 0o600 });
  return bounded;
}

/** The exit status as a ledger value: the agent's status is 0..255, ours 80..91. */
export function ledgerExit(code: number): number {
  return Number.isInteger(code) && code >= 0 && code <= 255 ? code : 91;
}

/**
 * Reading the ledger back (`agent-sandbox log`, `workspace list`'s last sessions): from its
 * end, since it only grows, and from the file one rotation old (`<ledger>.1`, rotate.ts) when
 * the current one holds fewer lines than asked for. A line that does not parse (a partial first
 * line of the tail read, a line of something else) is skipped.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { rotatedLedger } from './rotate.js';

/** The last `maxBytes` of a file as text, and whether that was all of it; empty when it cannot be read. */
export function tailOf(file: string, maxBytes: number): { text: string; whole: boolean } {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { text: '', whole: true };
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return { text: buffer.toString('utf8'), whole: length === size };
  } finally {
    closeSync(fd);
  }
}

/** The lines of a ledger text that parse as ledger lines, with their raw text, in file order. */
export function parseLines(text: string): { line: LedgerLine; raw: string }[] {
  const out: { line: LedgerLine; raw: string }[] = [];
  for (const raw of text.split('\n')) {
    if (!raw.startsWith('{')) continue;
    try {
      const line = JSON.parse(raw) as LedgerLine;
      if (typeof line.sessionId === 'string' && typeof line.startedAt === 'string') out.push({ line, raw });
    } catch {
      // a partial first line of the tail, or not a line of ours
    }
  }
  return out;
}

/** The last `n` lines (oldest first), from the ledger and, when it holds fewer, the rotated file before it. */
export function recentLines(ledgerFile: string, n: number, tailBytes = 16 << 20): { line: LedgerLine; raw: string }[] {
  const current = tailOf(ledgerFile, tailBytes);
  const lines = parseLines(current.text);
  if (lines.length >= n || !current.whole) return lines.slice(-n);
  const older = parseLines(tailOf(rotatedLedger(ledgerFile), tailBytes).text);
  return [...older, ...lines].slice(-n);
}

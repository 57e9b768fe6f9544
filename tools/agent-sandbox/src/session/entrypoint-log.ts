/**
 * The container entrypoint's own lines (image/entrypoint.sh: cred-stage install's output), which
 * it writes to <home>/.agent-sandbox-entrypoint.log instead of the user's terminal. Read after
 * the session into the ledger line and removed; with --verbose its words (not its JSON
 * documents, which are for programs) are also said on stderr, made safe to print. The
 * file was in the agent's reach: it is read and removed beneath the home without following a
 * link (shared/beneath), only when it is a regular file, and at most 16 KiB of it; a link the
 * agent put at its name is removed as a link and reported.
 */
import path from 'node:path';
import { readBeneath, removeBeneath } from '@agent-sandbox/shared/beneath';
import { entrypointLogName } from '@agent-sandbox/shared/container-layout';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { plantedOf, type PlantedLink } from '../workspace/home.js';

const maxBytes = 16 << 10;

export function entrypointLogPath(home: string): string {
  return path.join(home, entrypointLogName);
}

/** Before the run: whatever an earlier session left at the log's name goes (a link as a link). */
export function clearEntrypointLog(home: string): void {
  removeBeneath(home, entrypointLogPath(home));
}

export interface TakenLog {
  /** The lines; undefined when there is no such file (an image older than the quiet entrypoint). */
  entrypoint?: LedgerLine['entrypoint'];
  /** A link the agent put at the log's name (removed as a link). */
  planted: PlantedLink[];
}

/** Reads the lines and removes the file; never throws (a home that vanished has no log). */
export function takeEntrypointLog(home: string): TakenLog {
  const file = entrypointLogPath(home);
  let data: Buffer | undefined;
  let size = 0;
  let planted: PlantedLink | undefined;
  try {
    const read = readBeneath(home, file, maxBytes);
    if (read.data) ({ data, size } = read);
    planted = plantedOf(home, removeBeneath(home, file));
  } catch {
    // no home (it vanished, or is not a real directory): nothing to read or clean
  }
  const out: TakenLog = { planted: planted ? [planted] : [] };
  if (!data) return out;
  const lines = data
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '');
  return { ...out, entrypoint: { lines, truncated: size > maxBytes } };
}

/** The lines a person reads: the entrypoint's words (at most 20), each made safe to print (the agent could have rewritten the file); its JSON documents stay in the ledger. */
export function entrypointWords(entrypoint: TakenLog['entrypoint']): string[] {
  return (entrypoint?.lines ?? [])
    .filter((line) => !/^\s*[[{]/.test(line))
    .slice(0, 20)
    .map((line) => forTerminal(line));
}

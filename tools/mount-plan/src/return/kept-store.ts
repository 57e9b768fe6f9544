/**
 * A store whose import failed for a reason outside the session's content (import-fault.ts) is
 * kept, not removed: its commits exist nowhere else. `<store>/kept.json` (the launcher's, 0600,
 * beside store.json; the session never had it mounted) counts the attempts. The launcher starts
 * that follow retry the import (agent-sandbox's sweep), `maxImportRetries` times; after that the
 * store stays for the user, who imports it (`agent-sandbox workspace import <id>`) or removes it.
 * The next session in the same workspace always retries first and is refused while it fails.
 */
import { closeSync, constants, fstatSync, openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import type { GitReturn } from '@agent-sandbox/shared/schemas/mount-plan';

export const keptName = 'kept.json';

/** Retries by later launcher starts after the first import failed: then it waits for the user. */
export const maxImportRetries = 3;

export interface KeptState {
  version: 1;
  /** Imports tried so far (the first, at the session's end, included). */
  attempts: number;
  /** What failed last. */
  why: string;
  keptAt: string;
  lastAt: string;
  /** Where the commits wait meanwhile, when an attempt parked them (the retry removes only this ref once the branch holds them). */
  sideRef?: string;
}

/** The store's keep state, or undefined when it has none (never kept) or it cannot be read as one. */
export function readKept(dir: string): KeptState | undefined {
  let fd: number;
  try {
    fd = openSync(`${dir}/${keptName}`, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buffer = Buffer.alloc(64 << 10);
    const state = JSON.parse(buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString('utf8')) as KeptState;
    if (state.sideRef !== undefined && (typeof state.sideRef !== 'string' || !state.sideRef.startsWith('refs/agent-sandbox/returned/')))
      delete state.sideRef;
    return state.version === 1 && Number.isInteger(state.attempts) && state.attempts > 0 ? state : undefined;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Records one more failed import (written whole: a temporary file renamed over it). */
export function recordKept(dir: string, why: string, now = new Date(), sideRef?: string): KeptState {
  const was = readKept(dir);
  const parked = sideRef ?? was?.sideRef;
  const state: KeptState = {
    version: 1,
    attempts: (was?.attempts ?? 0) + 1,
    why: why.slice(0, 2000),
    keptAt: was?.keptAt ?? now.toISOString(),
    lastAt: now.toISOString(),
    ...(parked ? { sideRef: parked } : {}),
  };
  const temp = `${dir}/.${keptName}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  renameSync(temp, `${dir}/${keptName}`);
  return state;
}

/** Whether a launcher start still retries this store on its own (else it waits for the user). */
export const retriedByNextStart = (state: KeptState): boolean => state.attempts <= maxImportRetries;

/** The ledger's `storeKept`. */
export function storeKeptOf(dir: string, state: KeptState): NonNullable<GitReturn['storeKept']> {
  return { path: dir, why: state.why, attempts: state.attempts, retried: retriedByNextStart(state) };
}

/**
 * Holding a workspace for one session (step 6 of launch.ts): its lock, the host-wide lock of
 * its id (another root's workspace of the same id shares its host names), its record and its
 * sentinel, taken in that order once the host's checks passed and before anything is created,
 * and given back after the session's ledger line is written. From the record on, a launcher
 * that dies in any way leaves what its sentinel, or the next launcher start, needs to remove
 * what the session made and to write its one line (sweep.ts). The receiver carrying work
 * already holds the lock (from the bundle to the commits' return): then only the record and the
 * sentinel are taken here, and the lock is left to it.
 */
import { rmSync } from 'node:fs';
import type { HeldLock } from '@agent-sandbox/shared/flock';
import type { SessionLayout } from '../workspace/layout.js';
import { lockSessionId, lockWorkspace, writeRecord } from '../workspace/lock.js';
import type { SessionRecord } from '../workspace/session-record.js';
import { startSentinel } from './sentinel.js';

export interface Hold {
  record: SessionRecord;
  /** Writes a change into the record (whole: a temp file renamed over it). */
  update(change: Partial<SessionRecord>): void;
  /** The record removed, the sentinel dismissed, the lock released (unless the caller holds it). Idempotent. */
  release(): void;
}

/** Takes the workspace (92 when a session holds it) and writes the record; the sentinel watches from here on. */
export function holdWorkspace(layout: SessionLayout, record: SessionRecord, heldByCaller?: HeldLock): Hold {
  const lock = heldByCaller ?? lockWorkspace(layout.lockFile, layout.recordFile, layout.sessionId);
  let idLock: HeldLock | undefined;
  let sentinel: ReturnType<typeof startSentinel> | undefined;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    rmSync(layout.recordFile, { force: true });
    sentinel?.release();
    idLock?.release();
    if (!heldByCaller) lock.release();
  };
  try {
    idLock = lockSessionId(layout.sessionId, layout.root);
    writeRecord(layout.recordFile, record);
    sentinel = startSentinel(layout.recordFile, layout.root, lock, idLock);
  } catch (err) {
    release();
    throw err;
  }
  return { record, update: (change) => writeRecord(layout.recordFile, Object.assign(record, change)), release };
}

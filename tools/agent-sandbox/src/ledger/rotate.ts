/**
 * The ledger does not grow without bound either: when a line would take it past 64 MiB it is
 * renamed to `<ledger>.1` (replacing the older one) and a new file begins, so the ledger holds
 * at most about 128 MiB: at a few KiB a line, the last 20 000-40 000 sessions.
 *
 * Launchers append concurrently (O_APPEND, one write per line). Only the rotation is locked
 * (flock on `<ledger>.rotate.lock`, taken only when the file is over the size, so a normal
 * append costs one stat): whoever holds it looks at the size again and renames; a launcher that
 * opened the file before the rename appends to `.1`, which is where its line then is. Nothing
 * is ever deleted but the file two rotations old.
 */
import { renameSync, statSync } from 'node:fs';
import { tryLock } from '@agent-sandbox/shared/flock';

export const ledgerRotateBytes = 64 * 2 ** 20;

/** The older file, kept after a rotation. */
export const rotatedLedger = (file: string) => `${file}.1`;

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Rotates `file` when `adding` more bytes would take it past `maxBytes`. */
export function rotateLedger(file: string, adding: number, maxBytes = ledgerRotateBytes): boolean {
  if (sizeOf(file) + adding <= maxBytes) return false;
  let lock;
  try {
    lock = tryLock(`${file}.rotate.lock`);
  } catch {
    return false; // no flock: the line is appended all the same, the file rotates later
  }
  if (!lock) return false; // another launcher is rotating it now
  try {
    if (sizeOf(file) + adding <= maxBytes) return false;
    renameSync(file, rotatedLedger(file));
    return true;
  } finally {
    lock.release();
  }
}

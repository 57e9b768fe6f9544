/**
 * An open /dev/kmsg kept for one session. Opening is cheap; reading the ring
 * to its end (one read() per record, ~2 000 records here) is not, so that
 * first drain runs in slices on the event loop while podman starts, and the
 * end reads only what is new from the same descriptor.
 *
 * Which records are the session's: those after the point where the first
 * drain reached the end of the ring, PROVIDED nothing of the session existed
 * yet at that moment (`onDrained` checks: no cidfile, no child cgroup; podman
 * creates the cidfile before conmon and runc make any cgroup). Should the
 * drain lose that race (a loaded host), the records up to its mark are not
 * thrown away blindly: `finish` reads the ring again and counts those naming
 * the new container's own cgroup (`libpod-<id>`, an id no earlier container had).
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { kmsgPath, parseKmsgRecord, readKmsg, type KmsgRead, type KmsgRecord } from './kernel-log.js';

export interface KmsgCursor {
  /** Sequence number of the last record the first drain read (-1 until it ended, or an empty ring). */
  readonly mark: number;
  /** Whether /dev/kmsg opened: the kernel's own lines about this session will be read at its end. */
  readonly opened: boolean;
  readonly drained: boolean;
  /** Reads on to the end of the ring in slices, yielding to the event loop between them. */
  drainInBackground(): Promise<void>;
  /**
   * Finishes the first drain if it has not ended, then reads the records written since it
   * ended. `earlyCounts(message)` decides which records up to the mark also count (only when the first read lost the race).
   */
  finish(earlyCounts?: (message: string) => boolean): KmsgRead;
  close(): void;
}

export interface KmsgCursorOptions {
  /** Called once, right after the first drain reached the end; its answer is `raced` in `finish`. */
  onDrained?: () => boolean;
  file?: string;
  /** Records per slice of the background drain. */
  slice?: number;
}

type Failure = { state: 'unreadable' | 'absent'; error: string };

interface CursorState {
  fd: number | undefined;
  failed: Failure | undefined;
  buffer: Buffer;
  mark: number;
  drained: boolean;
  raced: boolean;
  lastLength: number;
}

function openError(err: unknown): Failure {
  const e = err as NodeJS.ErrnoException;
  const why =
    e.code === 'EPERM' || e.code === 'EACCES'
      ? `${e.code}: reading the kernel log needs CAP_SYSLOG (kernel.dmesg_restrict)`
      : `${e.code ?? ''} ${e.message}`;
  return { state: e.code === 'ENOENT' ? 'absent' : 'unreadable', error: why.trim() };
}

/** One read() of one record: its length, 0 at the end of the ring, 'skip' when it was overwritten, or a failure. */
function readRecord(state: CursorState): number | 'skip' | Failure {
  try {
    return readSync(state.fd!, state.buffer, 0, state.buffer.length, null);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EPIPE') return 'skip'; // overwritten while we read: go on with the next one
    if (code === 'EAGAIN') return 0;
    return { state: 'unreadable', error: `${code ?? ''} ${(err as Error).message}`.trim() };
  }
}

/** Reads up to `limit` records of the first drain; true once the end of the ring was reached. */
function drainStep(state: CursorState, limit: number, onDrained: (() => boolean) | undefined): boolean {
  if (state.drained || state.fd === undefined) return true;
  for (let i = 0; i < limit; i += 1) {
    const n = readRecord(state);
    if (n === 'skip') continue;
    if (typeof n === 'object') state.failed = n;
    if (typeof n === 'object' || n === 0) {
      if (state.lastLength > 0) state.mark = parseKmsgRecord(state.buffer.toString('utf8', 0, state.lastLength))?.seq ?? -1;
      state.drained = true;
      state.raced = onDrained?.() ?? false;
      return true;
    }
    state.lastLength = n;
  }
  return false;
}

/** The records written after the mark (and, after a lost race, the early ones `earlyCounts` keeps). */
function readNew(state: CursorState, file: string, earlyCounts: ((message: string) => boolean) | undefined): KmsgRead {
  const records: KmsgRecord[] = [];
  if (state.raced && earlyCounts) {
    // Rare (the first read ended only after podman began): read the ring again from its
    // start, keeping up to the mark only what names this container.
    const again = readKmsg(-1, file);
    if (again.state !== 'read') return again;
    for (const r of again.records) if (r.seq <= state.mark && earlyCounts(r.message)) records.push(r);
  }
  for (;;) {
    if (state.failed) return state.failed;
    const n = readRecord(state);
    if (n === 'skip') continue;
    if (typeof n === 'object') return n;
    if (n === 0) break;
    const record = parseKmsgRecord(state.buffer.toString('utf8', 0, n));
    if (record && record.seq > state.mark) records.push(record);
  }
  return { state: 'read', records };
}

export function openKmsgCursor(options: KmsgCursorOptions): KmsgCursor {
  const file = options.file ?? kmsgPath;
  const state: CursorState = {
    fd: undefined,
    failed: undefined,
    buffer: Buffer.alloc(16384),
    mark: -1,
    drained: false,
    raced: false,
    lastLength: 0,
  };
  try {
    state.fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    state.failed = openError(err);
  }
  return {
    get mark() {
      return state.mark;
    },
    opened: state.fd !== undefined,
    get drained() {
      return state.drained;
    },
    drainInBackground() {
      return new Promise<void>((resolve) => {
        const next = () => (drainStep(state, options.slice ?? 200, options.onDrained) ? resolve() : setImmediate(next));
        setImmediate(next);
      });
    },
    finish(earlyCounts) {
      if (state.fd === undefined) return state.failed ?? { state: 'unreadable', error: 'closed' };
      while (!drainStep(state, Number.MAX_SAFE_INTEGER, options.onDrained));
      return readNew(state, file, earlyCounts);
    },
    close() {
      if (state.fd === undefined) return;
      const open = state.fd;
      state.fd = undefined;
      state.drained = true;
      state.failed ??= { state: 'unreadable', error: 'the kernel log cursor was closed' };
      closeSync(open);
    },
  };
}

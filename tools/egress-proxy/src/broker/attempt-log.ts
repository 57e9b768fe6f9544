/**
 * The record of a session's egress: one JSON line per attempt, written when the attempt ends
 * (so it carries the bytes and the duration), in a file whose size the session cannot choose.
 *
 * - Refusals and failures are aggregated: identical ones (same host, port, rule and decision)
 *   within one interval (10 s) make one line, written when the interval ends, with `count` and
 *   `lastTime`. An allowed attempt always has its own line (it carries bytes).
 * - The log has a byte cap (8 MiB). The line that would pass it is replaced by one `log-capped`
 *   line, the last; later attempts are only counted (the summary says how many lines were
 *   dropped). The cap line's room is kept free, so the file never passes the cap.
 * - What waits for the interval is bounded too: more than 1 024 distinct rows pending flush the
 *   interval early.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { EgressAttempt, EgressLogCapped, EgressLogLine, EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';

export type AttemptWriter = (line: EgressLogLine) => void;

export interface AttemptLogLimits {
  capBytes: number;
  intervalMs: number;
  maxPending: number;
}

export const defaultLogLimits: AttemptLogLimits = { capBytes: 8 * 2 ** 20, intervalMs: 10_000, maxPending: 1024 };

/** The cap line is at most this long (a session id is at most 128 bytes). */
const capLineRoom = 512;

/** A line writer for an open fd: one write(2) per line, so lines never interleave. */
function fdWriter(fd: number): AttemptWriter {
  return (line) => {
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`);
    for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written);
  };
}

/** Lines to `path` (appended, created 0600) or to fd 1; close() after the last line. */
export function openAttemptLog(path: string | undefined): { write: AttemptWriter; close(): void } {
  if (path === undefined) return { write: fdWriter(1), close: () => undefined };
  const fd = openSync(path, 'a', 0o600);
  let open = true;
  return {
    write: fdWriter(fd),
    close: () => {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

const lineBytes = (line: EgressLogLine) => Buffer.byteLength(JSON.stringify(line)) + 1;

/** Aggregation and the cap in front of a line writer. flush() ends the interval; close() the log. */
export class AttemptLog {
  private readonly pending = new Map<string, EgressAttempt>();
  private readonly timer: NodeJS.Timeout;
  private bytes = 0;
  private capped = false;
  private droppedLines = 0;

  constructor(
    private readonly session: string,
    private readonly write: AttemptWriter,
    private readonly limits: AttemptLogLimits = defaultLogLimits,
  ) {
    this.timer = setInterval(() => this.flush(), limits.intervalMs);
    this.timer.unref();
  }

  record(line: EgressAttempt): void {
    if (line.decision === 'allowed') {
      this.emit(line);
      return;
    }
    const key = JSON.stringify([line.host, line.port, line.rule, line.decision]);
    const row = this.pending.get(key);
    if (row) {
      row.count = (row.count ?? 1) + (line.count ?? 1);
      row.lastTime = line.time;
      return;
    }
    if (this.pending.size >= this.limits.maxPending) this.flush();
    this.pending.set(key, { ...line });
  }

  /** Writes every pending row (the interval's end). */
  flush(): void {
    const rows = [...this.pending.values()];
    this.pending.clear();
    for (const row of rows) this.emit(row);
  }

  close(): void {
    clearInterval(this.timer);
    this.flush();
  }

  /** The summary's view of the log. */
  state(): NonNullable<EgressSummary['log']> {
    return { bytes: this.bytes, capBytes: this.limits.capBytes, capped: this.capped, droppedLines: this.droppedLines };
  }

  private emit(line: EgressAttempt): void {
    if (this.capped) {
      this.droppedLines += 1;
      return;
    }
    const size = lineBytes(line);
    if (this.bytes + size > this.limits.capBytes - capLineRoom) {
      this.capped = true;
      this.droppedLines += 1;
      const cap: EgressLogCapped = {
        time: new Date().toISOString(),
        session: this.session,
        event: 'log-capped',
        capBytes: this.limits.capBytes,
      };
      this.bytes += lineBytes(cap);
      this.write(cap);
      return;
    }
    this.bytes += size;
    this.write(line);
  }
}

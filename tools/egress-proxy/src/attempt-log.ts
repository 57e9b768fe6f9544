/**
 * The record of a session's egress: one JSON line per attempt (written when the attempt
 * ends, so it carries the bytes and the duration) and the summary the launcher puts in the
 * ledger (hosts reached with counts and bytes, and what was refused).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { EgressAttempt, EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';

export type AttemptWriter = (line: EgressAttempt) => void;

/** A line writer for an open fd: one write(2) per line, so lines never interleave. */
function fdWriter(fd: number): AttemptWriter {
  return (line) => {
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`);
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
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

/** Counts attempts as they end; `summary()` is the ledger's view at any moment. */
export class SummaryCounter {
  private readonly reached = new Map<string, EgressSummary['reached'][number]>();
  private readonly refused = new Map<string, EgressSummary['refused'][number]>();
  private counts = { attempts: 0, allowed: 0, denied: 0, failed: 0 };

  constructor(private readonly session: string) {}

  add(line: EgressAttempt): void {
    this.counts.attempts += 1;
    this.counts[line.decision] += 1;
    if (line.decision === 'allowed' && line.host !== null && line.port !== null) {
      const key = `${line.host} ${line.port}`;
      const row = this.reached.get(key) ?? { host: line.host, port: line.port, connections: 0, bytesUp: 0, bytesDown: 0 };
      row.connections += 1;
      row.bytesUp += line.bytesUp;
      row.bytesDown += line.bytesDown;
      this.reached.set(key, row);
      return;
    }
    if (line.decision === 'allowed') return;
    const key = JSON.stringify([line.host, line.port, line.rule, line.decision]);
    const row = this.refused.get(key) ?? { host: line.host, port: line.port, rule: line.rule, decision: line.decision, count: 0 };
    row.count += 1;
    this.refused.set(key, row);
  }

  summary(): EgressSummary {
    const byHost = (a: { host: string | null; port: number | null }, b: { host: string | null; port: number | null }) =>
      String(a.host).localeCompare(String(b.host)) || (a.port ?? 0) - (b.port ?? 0);
    return {
      session: this.session,
      ...this.counts,
      reached: [...this.reached.values()].map((r) => ({ ...r })).sort(byHost),
      refused: [...this.refused.values()].map((r) => ({ ...r })).sort(byHost),
    };
  }
}

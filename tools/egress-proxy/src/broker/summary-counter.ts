/**
 * The summary the launcher puts in the ledger, counted as attempts end, in memory that does not
 * grow with what the session asks for: at most `trackRows` distinct rows are tracked per list
 * (hosts reached, refusals by host, port and rule). When a list is full, its less frequent half
 * is dropped into the "others" tally, so a name asked for often keeps its row while a flood of
 * names asked once each costs a fixed amount. The totals (attempts, allowed, denied, failed) are
 * exact; the summary names the `named` most frequent rows of each list, then counts the others.
 */
import { boundedList } from '@agent-sandbox/shared/bounded-list';
import type { EgressAttempt, EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';

type Reached = EgressSummary['reached'][number];
type Refused = EgressSummary['refused'][number];

export interface SummaryLimits {
  /** Rows named in the summary, per list. */
  named: number;
  /** Distinct rows tracked, per list. */
  trackRows: number;
}

export const defaultSummaryLimits: SummaryLimits = { named: 20, trackRows: 1024 };

/** A map of rows with a count, never longer than `max`: when full, the less frequent half goes. */
class BoundedRows<Row> {
  private readonly rows = new Map<string, Row>();
  /** Rows dropped and the attempts they had counted. */
  droppedRows = 0;
  droppedCount = 0;

  constructor(
    private readonly max: number,
    private readonly countOf: (row: Row) => number,
  ) {}

  row(key: string, make: () => Row): Row {
    let row = this.rows.get(key);
    if (row) return row;
    if (this.rows.size >= this.max) this.dropLessFrequentHalf();
    row = make();
    this.rows.set(key, row);
    return row;
  }

  private dropLessFrequentHalf(): void {
    const sorted = [...this.rows].sort((a, b) => this.countOf(a[1]) - this.countOf(b[1]));
    for (const [key, row] of sorted.slice(0, Math.ceil(sorted.length / 2))) {
      this.rows.delete(key);
      this.droppedRows += 1;
      this.droppedCount += this.countOf(row);
    }
  }

  /** The most frequent first (ties: by host, then port), copied. */
  sorted(byHost: (a: Row, b: Row) => number): Row[] {
    return [...this.rows.values()].map((r) => ({ ...r })).sort((a, b) => this.countOf(b) - this.countOf(a) || byHost(a, b));
  }
}

const byHost = (a: { host: string | null; port: number | null }, b: { host: string | null; port: number | null }) =>
  String(a.host).localeCompare(String(b.host)) || (a.port ?? 0) - (b.port ?? 0);

/** Counts attempts as they end; `summary()` is the ledger's view at any moment. */
export class SummaryCounter {
  private readonly reached: BoundedRows<Reached>;
  private readonly refused: BoundedRows<Refused>;
  private counts = { attempts: 0, allowed: 0, denied: 0, failed: 0 };

  constructor(
    private readonly session: string,
    private readonly limits: SummaryLimits = defaultSummaryLimits,
  ) {
    this.reached = new BoundedRows<Reached>(limits.trackRows, (r) => r.connections);
    this.refused = new BoundedRows<Refused>(limits.trackRows, (r) => r.count);
  }

  /** One line, which may stand for several attempts (`count`). */
  add(line: EgressAttempt): void {
    const n = line.count ?? 1;
    this.counts.attempts += n;
    this.counts[line.decision] += n;
    if (line.decision === 'allowed' && line.host !== null && line.port !== null) {
      const { host, port } = line;
      const row = this.reached.row(`${host} ${port}`, () => ({ host, port, connections: 0, bytesUp: 0, bytesDown: 0 }));
      row.connections += n;
      row.bytesUp += line.bytesUp;
      row.bytesDown += line.bytesDown;
      return;
    }
    if (line.decision === 'allowed') return;
    const key = JSON.stringify([line.host, line.port, line.rule, line.decision]);
    const row = this.refused.row(key, () => ({ host: line.host, port: line.port, rule: line.rule, decision: line.decision, count: 0 }));
    row.count += n;
  }

  summary(): EgressSummary {
    const reached = boundedList(this.reached.sorted(byHost), this.limits.named);
    const refused = boundedList(this.refused.sorted(byHost), this.limits.named);
    const sum = <T>(rows: T[], of: (r: T) => number) => rows.reduce((total, r) => total + of(r), 0);
    const named = { reached: sum(reached.named, (r) => r.connections), refused: sum(refused.named, (r) => r.count) };
    const others = {
      reached: { rows: reached.others + this.reached.droppedRows, connections: this.counts.allowed - named.reached },
      refused: { rows: refused.others + this.refused.droppedRows, count: this.counts.denied + this.counts.failed - named.refused },
    };
    const anyOthers = others.reached.rows + others.reached.connections + others.refused.rows + others.refused.count > 0;
    return {
      session: this.session,
      ...this.counts,
      reached: reached.named,
      refused: refused.named,
      ...(anyOthers ? { others } : {}),
    };
  }
}

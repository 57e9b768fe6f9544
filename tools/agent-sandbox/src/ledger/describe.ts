/**
 * A ledger line in words, for a person: the last stderr line of a session (how it ended, and
 * which hosts the broker refused and why) and the cells of `agent-sandbox log`. Every name a
 * session could choose (a host it asked for, a reason it caused) goes through forTerminal.
 */
import type { EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { formatSize } from '@agent-sandbox/shared/limits';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';

/** Refused hosts named in a line: the most refused first, then a count of the others. */
export const namedRefusals = 3;

/**
 * What the broker refused, grouped by host and rule, most first: `api.anthropic.com x7
 * (resolve-failed), evil.example x2 (not-allowlisted) and 3 more`; undefined when nothing was.
 */
export function describeRefused(summary: EgressSummary | undefined, max = namedRefusals): string | undefined {
  if (!summary || summary.refused.length === 0) return undefined;
  const groups = new Map<string, { host: string; rule: string; count: number }>();
  for (const row of summary.refused) {
    const host = row.host === null ? '(no name)' : row.host;
    const key = `${host}\u0000${row.rule}`;
    const group = groups.get(key) ?? { host, rule: row.rule, count: 0 };
    group.count += row.count;
    groups.set(key, group);
  }
  const sorted = [...groups.values()].sort((a, b) => b.count - a.count);
  const named = sorted.slice(0, max).map((g) => `${forTerminal(g.host)} x${g.count} (${forTerminal(g.rule)})`);
  const others = sorted.length - named.length + (summary.others?.refused.rows ?? 0);
  return `refused ${named.join(', ')}${others > 0 ? ` and ${others} more` : ''}`;
}

/**
 * The last stderr line of a session: `agent-sandbox: session fix-1 ended: exit 1, exited;
 * egress: refused api.anthropic.com x7 (resolve-failed)`; a refused one names its cause's code.
 */
export function describeEnd(line: LedgerLine): string {
  const where = line.remote ? ` on ${forTerminal(line.host)}` : '';
  const refused = describeRefused(line.egress?.summary);
  if (line.outcome === 'refused')
    return `agent-sandbox: session ${forTerminal(line.sessionId)}${where} was refused: exit ${line.exitCode}, ${forTerminal(line.reason)}`;
  return `agent-sandbox: session ${forTerminal(line.sessionId)}${where} ended: exit ${line.exitCode}, ${forTerminal(line.reason)}${refused ? `; egress: ${refused}` : ''}`;
}

/** The peaks in a few characters: `1.2g 38 pids 12.5s cpu`, or `-`. */
export function describePeak(peak: LedgerLine['peak']): string {
  if (!peak) return '-';
  const parts = [
    peak.memoryBytes === null ? undefined : formatSize(peak.memoryBytes),
    peak.pids === null ? undefined : `${peak.pids} pids`,
    peak.cpuSeconds === null ? undefined : `${peak.cpuSeconds.toFixed(1)}s cpu`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(' ') : '-';
}

/** The egress in a few words: what it could reach and what was refused. */
export function describeEgressCell(line: LedgerLine): string {
  const egress = line.egress;
  if (!egress) return '-';
  if (egress.mode !== 'broker') return egress.mode === 'none' ? 'offline' : 'own namespace';
  const summary = egress.summary;
  if (!summary) return 'broker';
  const refused = describeRefused(summary, 2);
  const reached = `${summary.allowed} allowed`;
  return refused ? `${reached}, ${refused}` : reached;
}

/** How long a session took, from its line: `4m12s`. */
export function describeDuration(line: Pick<LedgerLine, 'startedAt' | 'endedAt'>): string {
  const ms = Date.parse(line.endedAt) - Date.parse(line.startedAt);
  if (!Number.isFinite(ms) || ms < 0) return '-';
  return describeUptime(ms / 1000);
}

/** How long something has run, from seconds: `42s`, `4m12s`, `3h05m`. */
export function describeUptime(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

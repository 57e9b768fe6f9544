/**
 * Every ledger line is under 64 KiB, whatever the session did: a session chooses how many refs
 * it moves, how many nested repositories it makes, what the entrypoint log says and how many
 * names it asks the broker for, and none of that may decide how large a line the host writes
 * (a 4.7 MB line was measured before the broker's summary was bounded).
 *
 * The shrinker knows no field: it takes the largest array or long string of the line and cuts
 * it (an array keeps its first items, a string its beginning and a `…`) by as much as the line
 * is over but at most by half, and again until the line fits: several large fields each keep
 * their beginning. It marks the line with `truncated: {fields, bytes}`: which fields were cut
 * (at most 20 named; array items as `[]`) and how large the line was. Short strings (ids,
 * hashes, names the schema patterns) are never cut, so a cut line stays valid against the
 * schema; a line that still does not fit or validate keeps only who the session was and how it
 * ended.
 */
import { boundedList } from '@agent-sandbox/shared/bounded-list';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';

/** The line, its newline included, stays under 64 KiB. */
export const maxLineBytes = 64 * 1024 - 1;
/** Room kept for the `truncated` mark itself (20 paths of at most 100 characters). */
const markRoom = 4096;
/** Strings this short are never cut: ids, hashes, refs, rules, sizes. */
const minCutString = 256;

type Parent = Record<string, unknown> | unknown[];
interface Candidate {
  path: string;
  size: number;
  parent: Parent;
  key: string | number;
  value: unknown[] | string;
}

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/** The serialized size of `value`, and every array and long string under it, in one walk. */
function measure(value: unknown, path: string, parent: Parent | undefined, key: string | number, out: Candidate[]): number {
  if (typeof value === 'string') {
    const size = bytes(value);
    if (parent && value.length > minCutString) out.push({ path, size, parent, key, value });
    return size;
  }
  if (Array.isArray(value)) {
    let size = 2 + Math.max(0, value.length - 1);
    value.forEach((item, i) => (size += measure(item, `${path}[]`, value, i, out)));
    if (parent && value.length > 0) out.push({ path, size, parent, key, value });
    return size;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    let size = 2 + Math.max(0, entries.length - 1);
    for (const [k, v] of entries) size += bytes(k) + 1 + measure(v, path ? `${path}.${k}` : k, value as Record<string, unknown>, k, out);
    return size;
  }
  return bytes(value ?? null);
}

/**
 * Cuts the candidate by about `excess` bytes, but by at most half (at least one item or
 * character): several large fields then each keep their beginning, instead of the largest
 * losing everything.
 */
function cut(c: Candidate, excess: number): void {
  const keepShare = Math.max(0.5, ((c.size - excess) / c.size) * 0.95);
  const keep = Math.min(c.value.length - 1, Math.floor(c.value.length * keepShare));
  const next = typeof c.value === 'string' ? `${c.value.slice(0, Math.max(0, keep - 1))}…` : c.value.slice(0, Math.max(0, keep));
  if (Array.isArray(c.parent)) c.parent[c.key as number] = next;
  else c.parent[c.key as string] = next;
}

/** Who the session was and how it ended: what a line keeps when nothing else fits. */
function minimalLine(line: LedgerLine, truncated: NonNullable<LedgerLine['truncated']>): LedgerLine {
  const { version, runId, sessionId, runtime, account, host, containment, image, limits, startedAt, endedAt, exitCode, outcome, reason } =
    line;
  const clip = (s: string) => (s.length > minCutString ? `${s.slice(0, minCutString)}…` : s);
  return {
    version,
    ...(runId ? { runId } : {}),
    sessionId,
    runtime: clip(runtime),
    account: account === null ? null : clip(account),
    host: clip(host),
    containment,
    image: clip(image),
    limits,
    startedAt,
    endedAt,
    exitCode,
    outcome,
    reason: clip(reason),
    peak: line.peak,
    truncated: { ...truncated, fields: ['*'] },
  };
}

/**
 * The line as it may be written: unchanged when it fits, else cut and marked. `valid` says
 * whether a line is valid against the ledger schema (the writer's own validator).
 */
export function boundLine(line: LedgerLine, valid: (l: LedgerLine) => boolean = () => true, max = maxLineBytes): LedgerLine {
  const original = bytes(line);
  if (original <= max) return line;
  const copy = structuredClone(line) as LedgerLine & Record<string, unknown>;
  delete copy.truncated;
  const fields = new Set<string>();
  for (let round = 0; round < 200; round += 1) {
    const candidates: Candidate[] = [];
    const size = measure(copy, '', undefined, '', candidates);
    if (size <= max - markRoom) break;
    const largest = candidates.sort((a, b) => b.size - a.size)[0];
    if (!largest) break;
    fields.add(largest.path.slice(0, 100));
    cut(largest, size - (max - markRoom));
  }
  const named = boundedList([...fields], 20);
  const truncated = { fields: named.others > 0 ? [...named.named, `and ${named.others} more`] : named.named, bytes: original };
  const bounded = { ...copy, truncated };
  return bytes(bounded) <= max && valid(bounded) ? bounded : minimalLine(line, truncated);
}

/**
 * "At most N named, then a count": how every list a session can make long (refs it dropped, paths
 * it changed, hosts the broker refused) is reported on stderr and in the ledger, so that what the
 * session did never decides how much the host writes.
 */

export interface Bounded<T> {
  /** The first `max` items, in the order given. */
  named: T[];
  /** How many more there were. */
  others: number;
}

/** The first `max` items and a count of the rest. */
export function boundedList<T>(items: readonly T[], max = 20): Bounded<T> {
  return { named: items.slice(0, max), others: Math.max(0, items.length - max) };
}

/** `a, b, c and 17 more`: the named items (already made safe to print), then the count. */
export function describeBounded(bounded: Bounded<string>, noun = 'more'): string {
  const list = bounded.named.join(', ');
  return bounded.others > 0 ? `${list} and ${bounded.others} ${noun}` : list;
}

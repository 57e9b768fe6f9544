/**
 * The end of a session's start, for what the launcher does once it is quiet (run.ts: the
 * collection of the start's garbage, lib/shared/src/start-garbage.ts).
 */

/** How long after the container's start (or the first count's end, if later) the start counts as over. */
const defaultSettleMs = 5000;

/**
 * Calls `onSettled` once the start is over: the settle time after the later of the container's
 * start and the end of the disk watch's first count (on a big tree the count outlasts the start),
 * unless the session ended first (its end has work of its own to do). Counted from the later of
 * the two: on a big tree the first count outlasts the container's start, and a collection made
 * before the count ended would leave the count's own garbage to V8's memory reducer.
 */
export function settleAfterStart(
  onSettled: (() => void) | undefined,
  settleMs = defaultSettleMs,
): { started(): void; counted(): void; ended(): void } {
  const marks = { started: false, counted: false, over: false };
  let timer: NodeJS.Timeout | undefined;
  const settled = () => {
    try {
      if (!marks.over) onSettled?.();
    } catch {
      // what is done at the settle only saves later work: its failure is not the session's
    }
  };
  const mark = (which: 'started' | 'counted') => {
    marks[which] = true;
    if (!onSettled || timer || marks.over || !marks.started || !marks.counted) return;
    timer = setTimeout(settled, settleMs);
    timer.unref();
  };
  return {
    started: () => mark('started'),
    counted: () => mark('counted'),
    ended() {
      marks.over = true;
      clearTimeout(timer);
    },
  };
}

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
  counted: Promise<void>,
  onSettled: (() => void) | undefined,
  settleMs = defaultSettleMs,
): { started(): void; ended(): void } {
  let over = false;
  let timer: NodeJS.Timeout | undefined;
  let containerStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => (containerStarted = resolve));
  const settled = () => {
    try {
      if (!over) onSettled?.();
    } catch {
      // what is done at the settle only saves later work: its failure is not the session's
    }
  };
  if (onSettled)
    void Promise.all([started, counted]).then(() => {
      if (over) return;
      timer = setTimeout(settled, settleMs);
      timer.unref();
    });
  return {
    started: () => containerStarted(),
    ended() {
      over = true;
      clearTimeout(timer);
    },
  };
}

/**
 * Waiting in tests, one way: `sleep`; `until`, which polls a condition and says what did not
 * happen when it gives up; and `settledWithin`, which waits for a promise up to a bound. A test
 * that must not depend on time asserts the outcome, and uses the bound only so a hang fails with
 * a name instead of tap's file timeout.
 */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `ok` every `everyMs` until it holds; resolves with the milliseconds it took. After `ms`
 * it rejects with "<what>: not within <ms> ms" (a caller that would rather have false catches).
 */
export async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number, everyMs = 50): Promise<number> {
  const began = Date.now();
  while (!(await ok())) {
    if (Date.now() - began > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(everyMs);
  }
  return Date.now() - began;
}

/** `until` as a yes or no: true when `ok` held within `ms`. */
export async function within(ok: () => boolean | Promise<boolean>, ms: number, everyMs = 50): Promise<boolean> {
  return await until('', ok, ms, everyMs).then(
    () => true,
    () => false,
  );
}

/**
 * `p`'s value, or undefined once `ms` have passed. The timer is cleared when `p` settles first: a
 * bare `Promise.race([p, sleep(ms)])` leaves it pending, and node does not exit until it fires
 * (in the VM tier's guest a 300 s wait held the escape file open for minutes after its last test).
 */
export async function settledWithin<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, ms, undefined);
  });
  try {
    return await Promise.race([p, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

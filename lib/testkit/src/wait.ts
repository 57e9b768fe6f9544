/**
 * Waiting in tests, one way: `sleep`, and `until`, which polls a condition and says what did not
 * happen when it gives up. A test that must not depend on time asserts the outcome, and uses the
 * bound only so a hang fails with a name instead of tap's file timeout.
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

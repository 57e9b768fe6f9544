/**
 * One full collection of what a long-running command's start left behind, made when the command
 * says its start is over (the launcher: its container running and its first disk count done).
 *
 * Why: left alone, V8's memory reducer collects the start's garbage itself, a minute or two
 * later, in three incremental passes with concurrent marking on its worker threads: 35-50 ms of
 * CPU in what is otherwise a quiet session's 21-29 ms a minute (docs/performance.md, section 13).
 * One collection made at the end of the start costs about 10 ms there, and what the reducer does
 * later is two passes over a compacted heap.
 *
 * V8 gives a script its collector only under `--expose-gc`. The flag is set for as long as it
 * takes a fresh context to hand the function over and then unset: V8 stamps every code cache
 * with a hash of its flags, and a cache the launcher writes at its exit
 * (lib/shared/src/code-cache.cts) with the flag still set would be refused by every later start.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

let collector: (() => void) | undefined;

/** V8's own `gc`, taken once; undefined where this node will not give it. */
function obtainCollector(): (() => void) | undefined {
  if (collector) return collector;
  // Started with --expose-gc already: its gc is there, and the flags stay as they were.
  const exposed: unknown = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return (collector = exposed as () => void);
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    if (typeof gc === 'function') collector = gc as () => void;
  } catch {
    // no collector: the reducer does it later, as before
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  return collector;
}

/** Collects the start's garbage now; false when V8 gave no collector (nothing happened). */
export function collectStartGarbage(): boolean {
  const gc = obtainCollector();
  gc?.();
  return gc !== undefined;
}

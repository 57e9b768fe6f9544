/**
 * Watches the session parent's descendants for the limit events the kernel counts only in the
 * cgroup of the task that hit them. Measured in the VM tier's guest (Linux 6.1, cgroup v2, crun,
 * systemd): a fork bomb held at --pids-limit raises pids.events "max" in the container's own
 * cgroup (libpod-<id>.scope/container) and leaves the parent slice's at 0; the same on this v1
 * host (the child's pids.events, never the parent's). The container's cgroup is gone after
 * `--rm`, so it is read while the container runs. Memory needs none of this: a v2 parent's
 * memory.events counts its descendants' oom_kill (measured: 1 after a memory bomb, root and
 * rootless), and the kernel log records it on v1.
 *
 * A rejected fork is the agent running at its ceiling, which lasts (bash retries, a bomb keeps
 * forking): one look every 200 ms sees it. A single rejected fork in the last moments before the
 * container exits can be missed; the kernel log (root) still names it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { descendants, type CgroupLayout } from './cgroup-tree.js';
import { parseKeyed, type Counters } from './counters.js';

/** The counter key the watch reports (kept next to the parent's own in evidence.cgroup.counters). */
export const descendantPidsKey = 'descendants/pids.events:max';

/** The largest pids.events "max" among the parent's descendants now (0 when none has one). */
export function descendantPidsEvents(layout: CgroupLayout): number {
  let max = 0;
  for (const dir of descendants(layout.dirs.pids)) {
    try {
      max = Math.max(max, parseKeyed(readFileSync(path.join(dir, 'pids.events'), 'utf8'))['max'] ?? 0);
    } catch {
      // gone between readdir and read: nothing to count
    }
  }
  return max;
}

export interface EventWatch {
  /** Takes a last look and stops; the counters seen (only keys that were ever non-zero). */
  stop(): Counters;
}

export function watchDescendantEvents(layout: CgroupLayout, intervalMs = 200): EventWatch {
  let pids = 0;
  const look = () => {
    pids = Math.max(pids, descendantPidsEvents(layout));
  };
  const timer = setInterval(look, intervalMs);
  timer.unref();
  let stopped = false;
  return {
    stop() {
      if (!stopped) {
        clearInterval(timer);
        look();
        stopped = true;
      }
      const seen: Counters = {};
      if (pids > 0) seen[descendantPidsKey] = pids;
      return seen;
    },
  };
}

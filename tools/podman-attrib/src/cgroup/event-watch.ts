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
 * How the watch wakes is eventWatchPlan's: on events where the kernel sends them, not on a clock.
 * A rejected fork is the agent running at its ceiling, which lasts (bash retries, a bomb keeps
 * forking), so a backstop look every few seconds still sees it; a single rejected fork in the
 * last moments before the container exits can be missed by a look; the kernel log (root) names it.
 */
import { lstatSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { descendants, conmonCgroupForm, type CgroupLayout } from './cgroup-tree.js';
import { conmonScopeKey, parseKeyed, type Counters } from './counters.js';

/** The counter key the watch reports (kept next to the parent's own in evidence.cgroup.counters). */
export const descendantPidsKey = 'descendants/pids.events:max';

/** Whether one of the parent's descendants now is conmon's own scope (libpod-conmon-<id>.scope). */
function hasConmonScope(layout: CgroupLayout): boolean {
  return descendants(layout.dirs.pids, 1).some((dir) => conmonCgroupForm(path.basename(dir)) === 'scope');
}

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
  /** How it learns of a change, for the record (docs/performance.md, "What the launcher watches"). */
  readonly how: EventWatchPlan;
}

/**
 * How the watch learns of a rejected fork, by what the host offers:
 * - cgroup v2: the kernel reports every change of a pids.events file to inotify (kernfs sends a
 *   modify event to the file's directory), so the watch wakes only when one changes; a slow look
 *   every `pollMs` is the backstop for a kernel that does not.
 * - cgroup v1 with the kernel log open (root, the only way v1 runs here): the kernel names the
 *   first rejected fork of every cgroup there, and the verdict reads it at the end; v1's
 *   pids.events sends no inotify event (measured on this host), so there is nothing to wake on
 *   and nothing the watch would add: no look while the session runs.
 * - otherwise: a look every `pollMs`.
 */
export type EventWatchPlan = { inotify: boolean; pollMs: number | null };

/** The plan for a host: its cgroup version and whether the session's kernel log is open. */
export function eventWatchPlan(mode: CgroupLayout['mode'], kernelLogOpen: boolean): EventWatchPlan {
  if (mode === 'v2') return { inotify: true, pollMs: 2000 };
  return kernelLogOpen ? { inotify: false, pollMs: null } : { inotify: false, pollMs: 1000 };
}

/**
 * inotify watches on the parent's pids directory and every directory below it (the container's
 * cgroup and crun's `container` leaf appear while the session starts: a new directory is a
 * rename event in its parent). A parent systemd has not made yet (a slice appears with the
 * container's scope) is waited for the same way, from its own parent. A change of a pids.events
 * file, or a new directory, calls `onChange`.
 */
function watchTree(top: string, onChange: () => void): { close(): void } {
  const watchers = new Map<string, FSWatcher>();
  const isDir = (dir: string) => {
    try {
      return lstatSync(dir).isDirectory();
    } catch {
      return false;
    }
  };
  const open = (dir: string, onEvent: (event: string, name: string | null) => void): boolean => {
    if (watchers.has(dir)) return true;
    try {
      const w = watch(dir, { persistent: false }, (event, name) => onEvent(event, name === null ? null : String(name)));
      w.on('error', () => {
        w.close();
        watchers.delete(dir);
      });
      watchers.set(dir, w);
      return true;
    } catch {
      return false; // gone, or not there yet
    }
  };
  const add = (dir: string, depth: number): void => {
    if (
      depth > 3 ||
      !open(dir, (event, name) => {
        if (name === 'pids.events') onChange();
        else if (event === 'rename' && name && isDir(path.join(dir, name))) add(path.join(dir, name), depth + 1);
      })
    )
      return;
    for (const child of descendants(dir, 1)) add(child, depth + 1);
    onChange();
  };
  const awaitTop = (): void => {
    if (isDir(top)) return add(top, 0);
    const above = path.dirname(top);
    open(above, (event, name) => {
      if (event === 'rename' && name === path.basename(top) && isDir(top)) {
        watchers.get(above)?.close();
        watchers.delete(above);
        add(top, 0);
      }
    });
    if (isDir(top)) add(top, 0); // made between the check and the watch
  };
  awaitTop();
  return {
    close() {
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}

export function watchDescendantEvents(layout: CgroupLayout, plan: EventWatchPlan = { inotify: false, pollMs: 200 }): EventWatch {
  let pids = 0;
  let conmonScope = false;
  const look = () => {
    pids = Math.max(pids, descendantPidsEvents(layout));
    conmonScope ||= hasConmonScope(layout);
  };
  const timer = plan.pollMs === null ? undefined : setInterval(look, plan.pollMs);
  timer?.unref();
  const tree = plan.inotify ? watchTree(layout.dirs.pids, look) : undefined;
  let stopped = false;
  return {
    how: plan,
    stop() {
      if (!stopped) {
        clearInterval(timer);
        tree?.close();
        look();
        stopped = true;
      }
      const seen: Counters = {};
      if (pids > 0) seen[descendantPidsKey] = pids;
      if (conmonScope) seen[conmonScopeKey] = 1;
      return seen;
    },
  };
}

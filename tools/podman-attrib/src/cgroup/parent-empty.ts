/**
 * When the session's parent cgroup has no process left in it, so that its removal (cgroup-tree.ts)
 * succeeds: after `podman run` returned, conmon and podman's clean-up process are still in it.
 */
import { readFileSync, readdirSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { CgroupLayout } from './cgroup-tree.js';

/** v2's cgroup.events "populated": true/false, or undefined where the file is missing or unreadable. */
function populatedEvent(dir: string): boolean | undefined {
  try {
    const m = /^populated ([01])$/m.exec(readFileSync(path.join(dir, 'cgroup.events'), 'utf8'));
    return m ? m[1] === '1' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a process is a member of `dir` or of a cgroup below it, from `cgroup.procs`. A task
 * leaves cgroup.procs when it exits, a zombie included, which is also when the kernel lets the
 * cgroup be removed. A directory that is gone holds no one; one that cannot be read counts as
 * empty too: the removal's rmdir, which the kernel refuses while a member is left, decides.
 */
function hasMembers(dir: string, depth = 4): boolean {
  try {
    if (readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim() !== '') return true;
  } catch {
    return false;
  }
  if (depth === 0) return false;
  let children: string[];
  try {
    children = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => path.join(dir, e.name));
  } catch {
    return false;
  }
  return children.some((child) => hasMembers(child, depth - 1));
}

/**
 * Whether any process is still in the parent or below, in any hierarchy it appears in: cgroup v2's
 * `cgroup.events` `populated` where there is one, else the members listed in `cgroup.procs`.
 *
 * Not the pids controller's `pids.current`: it uncharges a task when the task is reaped, not when
 * it exits, so it counts zombies. conmon and podman's clean-up process are orphans, reparented to
 * PID 1; a PID 1 that reaps late (this project's VM: 1.5-2 s) held the launcher's exit that long
 * after they had gone. Measured here (v1 and the unified v2 mount): once an orphan in a cgroup has
 * exited, cgroup.procs is empty and `populated` is 0 at once, `pids.current` stays 1 until PID 1
 * reaps it, and rmdir of the cgroup succeeds meanwhile.
 */
export function parentHasTasks(layout: CgroupLayout): boolean {
  const dirs = layout.mode === 'v2' ? [layout.dirs.pids] : [layout.dirs.pids, ...layout.all.filter((dir) => dir !== layout.dirs.pids)];
  return dirs.some((dir) => populatedEvent(dir) ?? hasMembers(dir));
}

/** Resolves after `ms`, or sooner once `wake` is called. */
function nap(ms: number, wake: { fn?: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      wake.fn = undefined;
      resolve();
    }
    wake.fn = done;
  });
}

/**
 * Waits, without blocking the event loop, until no process is in the parent any more
 * (parentHasTasks), for at most `timeoutMs`; true when it emptied, false when the time ran out
 * with a process still inside (the caller then removes what it can, and a parent left keeps its
 * owner record for a later sweep). After `podman run` returned, conmon and the clean-up podman
 * it starts are still in the parent: 0.1-0.25 s on an idle host, more than removeParent's 3 s
 * under a load of 40 (the 64-session soak left 4 parents so). Waiting here first keeps the
 * synchronous removal from giving up on them. Looks often at first (they usually leave within
 * a few tenths of a second), then every 100 ms; on v2 the kernel's change notice on
 * `cgroup.events` (inotify) wakes it at once.
 */
export async function untilParentEmpty(layout: CgroupLayout, timeoutMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const wake: { fn?: () => void } = {};
  let watcher: FSWatcher | undefined;
  if (layout.mode === 'v2') {
    try {
      watcher = watch(path.join(layout.dirs.pids, 'cgroup.events'), { persistent: false }, () => wake.fn?.());
      watcher.on('error', () => undefined);
    } catch {
      watcher = undefined; // no cgroup.events (or no inotify): polling alone
    }
  }
  try {
    let interval = 10;
    while (parentHasTasks(layout)) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await nap(Math.min(interval, left), wake);
      interval = Math.min(100, interval * 2);
    }
    return true;
  } finally {
    watcher?.close();
  }
}

/**
 * Before the container starts: the caller-owned parent cgroup, the cidfile
 * path, and marks in the kernel and event logs, so that the end can be
 * attributed from sources that outlive the container.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cgroupMode } from '@agent-sandbox/shared';
import { cgroupLayout, cgroupRoot, createParent, removeSessionParent, type CgroupLayout } from '../cgroup/cgroup-tree.js';
import { eventLogMark, eventLogPath } from '../verdict/event-log.js';
import { eventWatchPlan, watchDescendantEvents, type EventWatch } from '../cgroup/event-watch.js';
import { openKmsgCursor, type KmsgCursor } from '../verdict/kmsg-cursor.js';
import { sessionParent, type SessionParent } from '../cgroup/session-parent.js';
import { recordOwner, sweepStaleParents } from '../cgroup/stale-parents.js';

export interface Attribution {
  sessionId: string;
  /**
   * For `podman run --cgroup-parent=`, in the form this host's cgroup manager takes: a path
   * relative to each hierarchy root with cgroupfs (/agent-sandbox/<sessionId>), a slice with
   * systemd (agent_sandbox-<sessionId, '-' escaped>.slice). See cgroup/session-parent.ts.
   */
  cgroupParent: string;
  /** The same parent: its manager, where the kernel puts it, its slice unit. */
  parent: SessionParent;
  /** For `podman run --cidfile=`; must not exist yet (podman refuses an existing one). */
  cidfile: string;
  layout: CgroupLayout;
  /**
   * Last kernel log sequence number before the session; -1 when unreadable, and until the
   * background read of the ring (started here, overlapping podman's start) reached its end.
   */
  readonly kmsgSeq: number;
  /** The kernel log, opened here and read on from where it was (attributeEnd finishes it). */
  kernel: KmsgCursor;
  eventLog: { path: string; offset: number };
  /** The container's own limit events, looked at while it runs (cgroup/event-watch.ts); attributeEnd stops it. */
  events: EventWatch;
  /**
   * Removes the parent cgroup tree (depth first), the cidfile and the owner record, then sweeps
   * parents left by owners that died (cgroup/stale-parents.ts); idempotent, synchronous. Returns what
   * was left of this session's parent.
   */
  cleanup(): string[];
}

export interface PrepareOptions {
  sessionId: string;
  /** Directory for the cidfile (default the OS temp dir). */
  runDir?: string;
}

export function prepareAttribution(options: PrepareOptions): Attribution {
  const parent = sessionParent(options.sessionId);
  const cgroupParent = parent.podmanArg;
  const layout = cgroupLayout(parent.relPath, cgroupMode(cgroupRoot));
  const cidfile = path.join(options.runDir ?? tmpdir(), `agent-sandbox-${options.sessionId}.cid`);
  rmSync(cidfile, { force: true });
  // Before the parent exists, so a sweep never sees this parent without its owner. A record
  // that cannot be written costs only the sweep's certainty (it then waits for the grace period).
  let owner: string | undefined;
  try {
    owner = recordOwner(options.sessionId);
  } catch {
    owner = undefined;
  }
  // systemd makes a slice itself when the container's scope starts in it; a path parent is ours to make.
  if (parent.manager === 'cgroupfs') createParent(layout);
  const logPath = eventLogPath();
  // Records after the point the first read reaches are the session's only while nothing of
  // the session existed then: podman creates the cidfile before conmon or runc make a cgroup.
  const kernel = openKmsgCursor({ onDrained: () => existsSync(cidfile) || hasChildCgroup(layout) });
  void kernel.drainInBackground();
  const events = watchDescendantEvents(layout, eventWatchPlan(layout.mode, kernel.opened));
  let cleaned = false;
  return {
    sessionId: options.sessionId,
    cgroupParent,
    parent,
    cidfile,
    layout,
    get kmsgSeq() {
      return kernel.mark;
    },
    kernel,
    eventLog: { path: logPath, offset: eventLogMark(logPath) },
    events,
    cleanup() {
      kernel.close();
      events.stop();
      if (cleaned) return [];
      const left = removeSessionParent(parent, layout);
      rmSync(cidfile, { force: true });
      // A parent left behind keeps its owner record: once this process has exited the record
      // names a dead owner, and the next sweep removes the parent. Without the record it would
      // wait on the record-less grace, which a v1 memory directory's mtime (seen here to keep
      // moving long after the session) can hold off for good.
      if (owner && left.length === 0) rmSync(owner, { force: true });
      cleaned = left.length === 0;
      try {
        sweepStaleParents({ except: options.sessionId });
      } catch {
        // a sweep never fails this session's cleanup; the next one tries again
      }
      return left;
    },
  };
}

/** Whether podman made anything under the parent yet (conmon's or the container's cgroup). */
function hasChildCgroup(layout: CgroupLayout): boolean {
  for (const dir of new Set([layout.dirs.memory, layout.dirs.pids])) {
    try {
      if (readdirSync(dir, { withFileTypes: true }).some((e) => e.isDirectory())) return true;
    } catch (err) {
      // A slice systemd has not made yet holds nothing; otherwise we cannot tell: count only
      // what names the new container.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return true;
    }
  }
  return false;
}

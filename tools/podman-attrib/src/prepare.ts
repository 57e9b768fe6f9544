/**
 * Before the container starts: the caller-owned parent cgroup, the cidfile
 * path, and marks in the kernel and event logs, so that the end can be
 * attributed from sources that outlive the container.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cgroupMode } from '@agent-sandbox/shared';
import { cgroupLayout, cgroupRoot, createParent, parentPath, removeParent, type CgroupLayout } from './cgroup-tree.js';
import { eventLogMark, eventLogPath } from './event-log.js';
import { openKmsgCursor, type KmsgCursor } from './kmsg-cursor.js';
import { recordOwner, sweepStaleParents } from './stale-parents.js';

export interface Attribution {
  sessionId: string;
  /** For `podman run --cgroup-parent=`: relative to each hierarchy root, e.g. /agent-sandbox/<sessionId>. */
  cgroupParent: string;
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
  /**
   * Removes the parent cgroup tree (depth first), the cidfile and the owner record, then sweeps
   * parents left by owners that died (stale-parents.ts); idempotent, synchronous. Returns what
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
  const cgroupParent = parentPath(options.sessionId);
  const layout = cgroupLayout(cgroupParent, cgroupMode(cgroupRoot));
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
  createParent(layout);
  const logPath = eventLogPath();
  // Records after the point the first read reaches are the session's only while nothing of
  // the session existed then: podman creates the cidfile before conmon or runc make a cgroup.
  const kernel = openKmsgCursor({ onDrained: () => existsSync(cidfile) || hasChildCgroup(layout) });
  void kernel.drainInBackground();
  let cleaned = false;
  return {
    sessionId: options.sessionId,
    cgroupParent,
    cidfile,
    layout,
    get kmsgSeq() {
      return kernel.mark;
    },
    kernel,
    eventLog: { path: logPath, offset: eventLogMark(logPath) },
    cleanup() {
      kernel.close();
      if (cleaned) return [];
      const left = removeParent(layout);
      rmSync(cidfile, { force: true });
      if (owner) rmSync(owner, { force: true });
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
    } catch {
      return true; // cannot tell: count only what names the new container
    }
  }
  return false;
}

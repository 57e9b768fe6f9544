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
import { openKmsgCursor, type KmsgCursor } from './kernel-log.js';

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
  /** Removes the parent cgroup tree (depth first) and the cidfile; idempotent, synchronous. Returns what was left. */
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
      cleaned = left.length === 0;
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

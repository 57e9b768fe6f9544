/**
 * Before the container starts: the caller-owned parent cgroup, the cidfile
 * path, and marks in the kernel and event logs, so that the end can be
 * attributed from sources that outlive the container.
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cgroupMode } from '@agent-sandbox/shared';
import { cgroupLayout, cgroupRoot, createParent, parentPath, removeParent, type CgroupLayout } from './cgroup-tree.js';
import { eventLogMark, eventLogPath } from './event-log.js';
import { kmsgMark } from './kernel-log.js';

export interface Attribution {
  sessionId: string;
  /** For `podman run --cgroup-parent=`: relative to each hierarchy root, e.g. /agent-sandbox/<sessionId>. */
  cgroupParent: string;
  /** For `podman run --cidfile=`; must not exist yet (podman refuses an existing one). */
  cidfile: string;
  layout: CgroupLayout;
  /** Last kernel log sequence number before the session; -1 when unreadable. */
  kmsgSeq: number;
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
  let cleaned = false;
  return {
    sessionId: options.sessionId,
    cgroupParent,
    cidfile,
    layout,
    kmsgSeq: kmsgMark(),
    eventLog: { path: logPath, offset: eventLogMark(logPath) },
    cleanup() {
      if (cleaned) return [];
      const left = removeParent(layout);
      rmSync(cidfile, { force: true });
      cleaned = left.length === 0;
      return left;
    },
  };
}

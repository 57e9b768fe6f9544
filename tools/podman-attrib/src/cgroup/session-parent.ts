/**
 * The session's parent cgroup in the form this host's cgroup manager takes, and where the
 * kernel puts it. Measured in the VM tier's guest (Debian 12, systemd 252, podman 4.3.1, crun):
 * - cgroupfs (no systemd as PID 1, as on our v1 machines): podman takes a path,
 *   `/agent-sandbox/<id>`, made by us under each hierarchy's root.
 * - systemd: podman refuses a path ("did not receive systemd slice as cgroup parent") and
 *   takes a slice name; systemd makes the slice when the container's scope starts in it and
 *   keeps it (active, empty) after the container is gone, so its counters outlive `--rm`
 *   until we stop it. A '-' in a slice name is nesting (`a-b.slice` is inside `a.slice`), so
 *   the session id's own dashes are escaped as systemd does (`\x2d`): one slice per session
 *   inside `agent_sandbox.slice`.
 * - rootless under systemd: the same slice, made by the user's own manager inside its
 *   delegated tree (user@<uid>.service); a user cannot mkdir anywhere else in /sys/fs/cgroup.
 */
import { cgroupManager, type CgroupManager } from '@agent-sandbox/shared';
import { checkSessionId, parentBase } from './cgroup-tree.js';

/** The slice every session's slice lives in (no '-': that would nest it in another slice). */
export const sliceBase = 'agent_sandbox';

export interface SessionParent {
  sessionId: string;
  manager: CgroupManager;
  /** What `podman run --cgroup-parent=` takes on this host. */
  podmanArg: string;
  /** The parent's path below a hierarchy's root: how the kernel log and /proc/<pid>/cgroup name it. */
  relPath: string;
  /** systemd only: the slice unit, and whether the user's own manager owns it (rootless). */
  slice?: { unit: string; user: boolean };
}

export interface ParentHost {
  manager: CgroupManager;
  /** Effective uid of the caller: non-zero means rootless podman. */
  uid: number;
}

export function currentHost(): ParentHost {
  return { manager: cgroupManager(), uid: process.geteuid?.() ?? 0 };
}

/** The session id as a slice name part: systemd's escaping of '-' (the only character of a session id that needs it). */
export function escapeSliceId(sessionId: string): string {
  return sessionId.replace(/-/g, '\\x2d');
}

/** The inverse of escapeSliceId; undefined for a name that is not one of our slices. */
export function sessionIdOfSlice(unit: string): string | undefined {
  const match = new RegExp(`^${sliceBase}-(.+)\\.slice$`).exec(unit);
  return match?.[1]?.replace(/\\x2d/g, '-');
}

/** The cgroup a user's own systemd manager delegates to it. */
export function userManagerPath(uid: number): string {
  return `/user.slice/user-${uid}.slice/user@${uid}.service`;
}

/** Where the session slices live (systemd), relative to the hierarchy root. */
export function sliceBasePath(uid: number): string {
  return `${uid === 0 ? '' : userManagerPath(uid)}/${sliceBase}.slice`;
}

export function sessionParent(sessionId: string, host: ParentHost = currentHost()): SessionParent {
  checkSessionId(sessionId);
  if (host.manager === 'cgroupfs') {
    const rel = `/${parentBase}/${sessionId}`;
    return { sessionId, manager: 'cgroupfs', podmanArg: rel, relPath: rel };
  }
  const unit = `${sliceBase}-${escapeSliceId(sessionId)}.slice`;
  return {
    sessionId,
    manager: 'systemd',
    podmanArg: unit,
    relPath: `${sliceBasePath(host.uid)}/${unit}`,
    slice: { unit, user: host.uid !== 0 },
  };
}

/** Where systemd puts a slice: each '-' is a level ("a-b.slice" is /a.slice/a-b.slice), as runc and crun expand it. */
export function expandSlice(unit: string): string {
  if (unit === '-.slice') return '';
  const stem = unit.slice(0, -'.slice'.length);
  const parts = stem.split('-');
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('-')}.slice`).join('');
}

/**
 * The parent a --cgroup-parent value names, ours or not: a path (cgroupfs) is where it says; a
 * slice is where systemd puts it (inside the user's manager when rootless). sessionId is ''
 * when it is not one of our session parents (podman's shared default parents, a test's own).
 */
export function parentFromArg(arg: string, host: ParentHost = currentHost()): SessionParent {
  if (!arg.endsWith('.slice')) {
    const id = arg.startsWith(`/${parentBase}/`) ? arg.slice(parentBase.length + 2) : '';
    return { sessionId: /^[^/]+$/.test(id) ? id : '', manager: 'cgroupfs', podmanArg: arg, relPath: arg };
  }
  const user = host.uid !== 0;
  return {
    sessionId: sessionIdOfSlice(arg) ?? '',
    manager: 'systemd',
    podmanArg: arg,
    relPath: `${user ? userManagerPath(host.uid) : ''}${expandSlice(arg)}`,
    slice: { unit: arg, user },
  };
}

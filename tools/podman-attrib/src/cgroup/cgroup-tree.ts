/**
 * The caller-owned parent cgroup a session container is started under
 * (`podman run --cgroup-parent=/agent-sandbox/<sessionId>`). It outlives the
 * container, so its counters can be read after `--rm` removed the container's
 * own cgroup. On cgroup v1 it is made in every controller hierarchy at the same
 * relative path; podman adds the other hierarchies and a `conmon` child itself,
 * so removal walks every hierarchy and removes depth first.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { ToolError, cgroupMode, type CgroupMode } from '@agent-sandbox/shared';
import { podmanEnv, systemPath } from '@agent-sandbox/shared/podman';

export const cgroupRoot = '/sys/fs/cgroup';
/** All session parents live under this directory of each hierarchy. */
export const parentBase = 'agent-sandbox';
/** v1 hierarchies whose counters we read; cpuset is left to podman (a fresh cpuset dir has no cpus). */
export const v1Controllers = ['memory', 'pids', 'cpu', 'cpuacct'] as const;

const sessionIdPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A session id becomes a path component: refuse anything that is not a plain name. */
export function checkSessionId(sessionId: string): string {
  if (!sessionIdPattern.test(sessionId)) {
    throw new ToolError(
      'usage',
      'invalid-session-id',
      `sessionId: expected 1-64 characters [A-Za-z0-9_.-] not starting with a dot or dash, got ${JSON.stringify(sessionId)}`,
    );
  }
  return sessionId;
}

/** The parent as podman's --cgroup-parent takes it with the cgroupfs manager: relative to each hierarchy root. */
export function parentPath(sessionId: string): string {
  return `/${parentBase}/${checkSessionId(sessionId)}`;
}

export interface CgroupLayout {
  mode: CgroupMode;
  /** Directory of the parent in the hierarchy that holds each controller's files. */
  dirs: { memory: string; pids: string; cpu: string; cpuacct: string };
  /** Every hierarchy directory the parent may appear in (for removal). */
  all: string[];
}

/** v1: every mounted hierarchy's directory, once (cpu and cpuacct are often one, linked twice). */
export function hierarchyRoots(root: string): string[] {
  const out = new Set<string>();
  for (const entry of readdirSync(root)) {
    const dir = path.join(root, entry);
    try {
      if (statSync(dir).isDirectory()) out.add(realpathSync(dir));
    } catch {
      // a vanished or unreadable entry holds nothing of ours
    }
  }
  return [...out];
}

/** Where the parent lives for this host's cgroup mode. */
export function cgroupLayout(parent: string, mode: CgroupMode = cgroupMode(cgroupRoot), root = cgroupRoot): CgroupLayout {
  if (mode === 'v2') {
    const dir = path.join(root, parent);
    return { mode, dirs: { memory: dir, pids: dir, cpu: dir, cpuacct: dir }, all: [dir] };
  }
  const at = (ctrl: string) => path.join(root, ctrl, parent);
  const dirs = { memory: at('memory'), pids: at('pids'), cpu: at('cpu'), cpuacct: at('cpuacct') };
  let roots: string[] = [];
  try {
    roots = hierarchyRoots(root);
  } catch {
    roots = [];
  }
  return { mode, dirs, all: [...new Set([...Object.values(dirs), ...roots.map((r) => path.join(r, parent))])] };
}

/** Makes the parent (every needed hierarchy on v1; controllers enabled for children on v2). */
export function createParent(layout: CgroupLayout, root = cgroupRoot): void {
  try {
    if (layout.mode === 'v2') {
      const dir = layout.dirs.memory;
      mkdirSync(dir, { recursive: true });
      // Children of the parent (podman's libpod-<id>, conmon) need the controllers delegated down to them.
      for (const level of [root, path.dirname(dir), dir]) {
        try {
          writeFileSync(path.join(level, 'cgroup.subtree_control'), '+memory +pids +cpu');
        } catch {
          // already enabled, or not ours to change; the counters then say what they say
        }
      }
      return;
    }
    for (const dir of new Set(Object.values(layout.dirs))) mkdirSync(dir, { recursive: true });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ToolError(
      'limits',
      'cgroup-parent-failed',
      `cannot create the session's parent cgroup (${e.code ?? e.message}): ${e.message}`,
    );
  }
}

/** Removes one cgroup directory tree depth first; returns the directories that could not be removed. */
export function removeTree(dir: string): string[] {
  let children: string[];
  try {
    children = readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => path.join(dir, d.name));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? [] : [dir];
  }
  const left = children.flatMap(removeTree);
  try {
    rmdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') left.push(dir);
  }
  return left;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Removes the parent from every hierarchy, retrying while conmon is still
 * leaving (EBUSY) for up to `waitMs`. The shared base (`/agent-sandbox`) stays,
 * like podman's own `libpod_parent`: removing it could race a concurrent
 * session's podman between its mkdir of the base and of its child.
 * Synchronous so it also runs from a process 'exit' handler.
 */
export function removeParent(layout: CgroupLayout, waitMs = 3000): string[] {
  const deadline = Date.now() + waitMs;
  let left: string[] = [];
  for (;;) {
    left = layout.all.flatMap(removeTree);
    if (left.length === 0 || Date.now() >= deadline) break;
    sleepSync(50);
  }
  return left;
}

/** Every cgroup below `dir` (depth first, a few levels: the container's scope and crun's child). */
/**
 * Which form of conmon's own cgroup a child of the session's parent is, if it is one: a `conmon` child (podman's
 * cgroupfs form) or its scope beside the container's (systemd's, `libpod-conmon-<id>.scope`).
 */
export function conmonCgroupForm(name: string): 'child' | 'scope' | undefined {
  if (name === 'conmon') return 'child';
  return name.startsWith('libpod-conmon-') ? 'scope' : undefined;
}

export function descendants(dir: string, depth = 3): string[] {
  if (depth === 0) return [];
  let names: string[];
  try {
    names = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
  return names.flatMap((name) => [path.join(dir, name), ...descendants(path.join(dir, name), depth - 1)]);
}

/** cgroup v2's own answer to "does anything run in here or below" (false where there is no cgroup.events). */
export function populated(dir: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(path.join(dir, 'cgroup.events'), 'utf8'));
  } catch {
    return false;
  }
}

/** systemctl, from the system's directories only (as podman is). */
function systemctlBinary(): string {
  return (
    systemPath
      .split(':')
      .map((dir) => `${dir}/systemctl`)
      .find((candidate) => existsSync(candidate)) ?? 'systemctl'
  );
}

/**
 * Stops a session's slice (systemd keeps an empty slice active, its cgroup with it). Stopping
 * also stops anything still running in it, so a container left behind cannot outlive it.
 * Synchronous, for the 'exit' handler; false when systemctl failed or could not be run.
 */
export function stopSlice(slice: { unit: string; user: boolean }): boolean {
  try {
    execFileSync(systemctlBinary(), [...(slice.user ? ['--user'] : []), 'stop', '--', slice.unit], {
      stdio: 'ignore',
      timeout: 30_000,
      env: podmanEnv(process.env),
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes a session's parent as its manager wants: a slice is stopped through systemd (which
 * removes its cgroup), a cgroupfs parent removed depth first. A slice systemd could not stop
 * is removed like a cgroupfs one, which the kernel allows only once it is empty.
 */
export function removeSessionParent(parent: { slice?: { unit: string; user: boolean } }, layout: CgroupLayout, waitMs = 3000): string[] {
  if (parent.slice && layout.all.some((dir) => existsSync(dir))) stopSlice(parent.slice);
  return removeParent(layout, waitMs);
}

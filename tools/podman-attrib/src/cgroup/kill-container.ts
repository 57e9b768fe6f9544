/**
 * SIGKILL to every process of one container, straight through its cgroup under the session's
 * parent (`libpod-<id>` with the cgroupfs manager, `libpod-<id>.scope` with systemd), never
 * conmon's: podman run still reports the container's end (137) as after `podman stop`. For
 * the disk ceiling, which cannot wait for a podman process to start (0.3-0.8 s here, in which
 * a writer puts 300-800 MB into the page cache).
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { descendants, type CgroupLayout } from './cgroup-tree.js';

/** The container's own cgroup directory, one level below the parent's directory in one hierarchy. */
function containerDir(parentDir: string, containerId: string): string | undefined {
  try {
    const name = readdirSync(parentDir).find((n) => n.includes(containerId) && !n.includes('conmon'));
    return name === undefined ? undefined : path.join(parentDir, name);
  } catch {
    return undefined;
  }
}

/** Every pid in the cgroup.procs files of `dir` and the cgroups below it. */
function treePids(dir: string): number[] {
  return [dir, ...descendants(dir)].flatMap((d) => {
    try {
      return readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      return []; // a cgroup that went away holds nothing to kill
    }
  });
}

/**
 * Kills the container's processes now. cgroup v2: `cgroup.kill` (Linux 5.14), the whole tree in
 * one write, no pid read and then reused. Else, or where that write is refused: SIGKILL to each
 * pid of the tree, in rounds until none is left (a process forked between a read and the kills
 * is caught by the next round). Returns how, or undefined when the container's cgroup is not
 * there (not started yet, or no parent: a rootless host on cgroup v1); the caller's `podman
 * stop` follows in every case.
 */
export function killContainerNow(layout: CgroupLayout, containerId: string): 'cgroup.kill' | 'signals' | undefined {
  const dir = containerDir(layout.dirs.pids, containerId);
  if (dir === undefined) return undefined;
  if (layout.mode === 'v2') {
    try {
      writeFileSync(path.join(dir, 'cgroup.kill'), '1');
      return 'cgroup.kill';
    } catch {
      // an older kernel, or not ours to write: signal each process below
    }
  }
  for (let round = 0; round < 10; round += 1) {
    const pids = treePids(dir);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  return 'signals';
}

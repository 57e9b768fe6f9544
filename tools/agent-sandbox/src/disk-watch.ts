/**
 * The disk ceiling (--disk) where the host's filesystem offers no quota for it: a watchdog.
 * What the session writes is its workspace's and home's growth over their size at the start,
 * as `du` counts it (allocated blocks, hard links once, one filesystem). `du` walks the trees,
 * so it runs only when the filesystems' own used-space counters (statfs, a cheap system call)
 * grew by half the room left since the last walk, and at least every 15 s. Others writing to
 * the same filesystem only make it walk sooner; the walk decides. The poll is paced by the room
 * left: often enough that a writer at the fastest rate seen here cannot use half the room
 * between two polls (every 20 ms near the ceiling, every 250 ms with gigabytes left). The
 * container's /tmp is a tmpfs charged to its memory cgroup, so --memory bounds it.
 */
import { statSync, statfsSync } from 'node:fs';
import { captureCommand } from '@agent-sandbox/shared/capture';
import { systemPath } from '@agent-sandbox/shared/podman';

export interface DiskWatchOptions {
  dirs: string[];
  limitBytes: number;
  onExceeded: (usage: DiskUsage) => void;
  /** A fixed poll period in place of the paced one (tests). */
  pollMs?: number;
  walkEveryMs?: number;
}

/** The fastest a session wrote here: dd of /dev/zero into the workspace, ~2 GB/s into the page cache. */
const fastestWriteBytesPerMs = (2 * 2 ** 30) / 1000;
const pollBoundsMs = { min: 20, max: 250 };

/** The poll period for this much room left: half of it cannot be written between two polls. */
function pollPeriodMs(roomBytes: number): number {
  const ms = roomBytes / 2 / fastestWriteBytesPerMs;
  return Math.round(Math.min(pollBoundsMs.max, Math.max(pollBoundsMs.min, ms)));
}

export interface DiskUsage {
  limitBytes: number;
  /** What the session added over the start (bytes); null until the first walk ended. */
  writtenBytes: number | null;
  baselineBytes: number | null;
  walks: number;
  mechanism: 'watchdog';
}

export interface DiskWatch {
  usage(): DiskUsage;
  /** Stops polling; returns the final usage after one last walk. */
  stop(): Promise<DiskUsage>;
}

/** Bytes allocated under the directories, counted by du (one filesystem, hard links once). */
export async function duBytes(dirs: string[]): Promise<number> {
  const out = await captureCommand('du', ['-s', '-B1', '-x', '-c', '--', ...dirs], { env: { PATH: systemPath, LC_ALL: 'C' }, timeoutMs: 120_000 });
  const total = /^(\d+)\s+total$/m.exec(out.stdout);
  if (!total) throw new Error(`du failed (exit ${out.exitCode}): ${out.stderr.trim().split('\n').pop() ?? ''}`);
  return Number(total[1]);
}

/** Used bytes of each distinct filesystem the directories are on. */
function filesystemsUsed(dirs: string[]): Map<number, number> {
  const used = new Map<number, number>();
  for (const dir of dirs) {
    try {
      const dev = statSync(dir).dev;
      if (used.has(dev)) continue;
      const fs = statfsSync(dir);
      used.set(dev, (fs.blocks - fs.bfree) * fs.bsize);
    } catch {
      // a directory that vanished grows nothing
    }
  }
  return used;
}

function grownSince(before: Map<number, number>, now: Map<number, number>): number {
  let grown = 0;
  for (const [dev, bytes] of now) grown += Math.max(0, bytes - (before.get(dev) ?? bytes));
  return grown;
}

export function watchDisk(options: DiskWatchOptions): DiskWatch {
  const state: DiskUsage = { limitBytes: options.limitBytes, writtenBytes: null, baselineBytes: null, walks: 0, mechanism: 'watchdog' };
  let atLastWalk = filesystemsUsed(options.dirs);
  let lastWalkAt = Date.now();
  let walking: Promise<void> | undefined;
  let exceeded = false;
  const walk = () =>
    (walking ??= (async () => {
      const before = filesystemsUsed(options.dirs);
      try {
        const bytes = await duBytes(options.dirs);
        state.walks += 1;
        if (state.baselineBytes === null) state.baselineBytes = bytes;
        state.writtenBytes = Math.max(0, bytes - state.baselineBytes);
        if (state.writtenBytes > options.limitBytes && !exceeded) {
          exceeded = true;
          options.onExceeded({ ...state });
        }
      } catch {
        // a failed walk is retried at the next trigger
      } finally {
        atLastWalk = before;
        lastWalkAt = Date.now();
        walking = undefined;
      }
    })());
  void walk();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const poll = () => {
    const room = options.limitBytes - (state.writtenBytes ?? 0);
    const grown = grownSince(atLastWalk, filesystemsUsed(options.dirs));
    if (!walking && !exceeded) {
      const due = Date.now() - lastWalkAt >= (options.walkEveryMs ?? 15_000);
      if (due || grown >= room / 2) void walk();
    }
    if (stopped || exceeded) return;
    timer = setTimeout(poll, options.pollMs ?? pollPeriodMs(room - grown));
    timer.unref();
  };
  poll();
  return {
    usage: () => ({ ...state }),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await walking;
      if (!exceeded) await walk();
      return { ...state };
    },
  };
}

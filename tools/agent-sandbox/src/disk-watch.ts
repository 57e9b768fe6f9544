/**
 * The disk ceiling (--disk) where the host's filesystem offers no quota for it: a watchdog with
 * two ceilings, bytes and files. What the session writes is its workspace's and home's growth
 * over their size at the start, as `du` counts it: allocated bytes (hard links once, one
 * filesystem) and, in the same walk, inodes (`du --inodes`: files, directories, links; empty
 * files cost no bytes, so only this count sees a loop of them). The file ceiling is derived
 * from --disk (limits.ts filesForDisk: one per 16 KiB), at most half the free inodes.
 *
 * `du` walks the trees, so it runs only when the filesystems' own counters (statfs: used
 * blocks and used inodes, a cheap system call) grew by half the room left in either since the
 * last walk, and at least every 15 s. Others writing to the same filesystem only make it walk
 * sooner; the walk decides. The poll is paced by the room left: often enough that a writer at
 * the fastest rate seen here cannot use half the room between two polls (every 20 ms near a
 * ceiling, every 250 ms far from both). The container's /tmp is a tmpfs charged to its memory
 * cgroup, so --memory bounds it.
 */
import { duBytes, duInodes, filesystemsUsed, grownSince, type FsUsed } from './disk-usage.js';

export { duBytes, duInodes };

export interface DiskWatchOptions {
  dirs: string[];
  limitBytes: number;
  limitFiles: number;
  onExceeded: (usage: DiskUsage) => void;
  /** A fixed poll period in place of the paced one (tests). */
  pollMs?: number;
  walkEveryMs?: number;
}

/** The fastest a session wrote here: dd of /dev/zero into the workspace, ~2 GB/s into the page cache. */
const fastestWriteBytesPerMs = (2 * 2 ** 30) / 1000;
/** The fastest a session made files here: a node loop of empty files, 1.87 M in 40 s (~47 000/s). */
const fastestFilesPerMs = 50;
const pollBoundsMs = { min: 20, max: 250 };

/** The poll period for this much room left: half of it cannot be used between two polls. */
export function pollPeriodMs(room: FsUsed): number {
  const ms = Math.min(room.bytes / 2 / fastestWriteBytesPerMs, room.inodes / 2 / fastestFilesPerMs);
  return Math.round(Math.min(pollBoundsMs.max, Math.max(pollBoundsMs.min, ms)));
}

/** The file ceiling for a session: the rule's, lowered to half the free inodes when that is less. */
export function filesCeiling(ruleFiles: number, freeInodes: number | undefined): number {
  return freeInodes === undefined ? ruleFiles : Math.max(1, Math.min(ruleFiles, Math.floor(freeInodes / 2)));
}

export interface DiskUsage {
  limitBytes: number;
  limitFiles: number;
  /** What the session added over the start (bytes, inodes); null until the first walk ended. */
  writtenBytes: number | null;
  writtenFiles: number | null;
  baselineBytes: number | null;
  baselineFiles: number | null;
  walks: number;
  /** How long the last walk took (ms): what it counted is as of its start. */
  walkMs: number | null;
  mechanism: 'watchdog';
  /** Which ceiling the session passed, once it did. */
  exceeded?: 'bytes' | 'files';
}

export interface DiskWatch {
  usage(): DiskUsage;
  /** Stops polling; returns the final usage after one last walk. */
  stop(): Promise<DiskUsage>;
}

/** One walk: both counts, the baselines from the first, and which ceiling (if any) is passed. */
async function walkOnce(dirs: string[], state: DiskUsage): Promise<void> {
  const began = performance.now();
  const [bytes, files] = await Promise.all([duBytes(dirs), duInodes(dirs)]);
  state.walkMs = Math.round(performance.now() - began);
  state.walks += 1;
  state.baselineBytes ??= bytes;
  state.baselineFiles ??= files;
  state.writtenBytes = Math.max(0, bytes - state.baselineBytes);
  state.writtenFiles = Math.max(0, files - state.baselineFiles);
  if (state.exceeded) return;
  if (state.writtenBytes > state.limitBytes) state.exceeded = 'bytes';
  else if (state.writtenFiles > state.limitFiles) state.exceeded = 'files';
}

export function watchDisk(options: DiskWatchOptions): DiskWatch {
  const state: DiskUsage = {
    limitBytes: options.limitBytes, limitFiles: options.limitFiles, writtenBytes: null, writtenFiles: null,
    baselineBytes: null, baselineFiles: null, walks: 0, walkMs: null, mechanism: 'watchdog',
  };
  let atLastWalk = filesystemsUsed(options.dirs);
  let lastWalkAt = Date.now();
  let walking: Promise<void> | undefined;
  const walk = () =>
    (walking ??= (async () => {
      const before = filesystemsUsed(options.dirs);
      const wasExceeded = state.exceeded;
      try {
        await walkOnce(options.dirs, state);
        if (state.exceeded && !wasExceeded) options.onExceeded({ ...state });
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
    const grown = grownSince(atLastWalk, filesystemsUsed(options.dirs));
    const room = { bytes: state.limitBytes - (state.writtenBytes ?? 0), inodes: state.limitFiles - (state.writtenFiles ?? 0) };
    if (!walking && !state.exceeded) {
      const due = Date.now() - lastWalkAt >= (options.walkEveryMs ?? 15_000);
      if (due || grown.bytes >= room.bytes / 2 || grown.inodes >= room.inodes / 2) void walk();
    }
    if (stopped || state.exceeded) return;
    timer = setTimeout(poll, options.pollMs ?? pollPeriodMs({ bytes: room.bytes - grown.bytes, inodes: room.inodes - grown.inodes }));
    timer.unref();
  };
  poll();
  return {
    usage: () => ({ ...state }),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await walking;
      if (!state.exceeded) await walk();
      return { ...state };
    },
  };
}

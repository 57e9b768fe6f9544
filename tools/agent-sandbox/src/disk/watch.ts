/**
 * The disk ceiling (--disk) where the host's filesystem offers no quota for it: a watchdog with
 * two ceilings, bytes and files. What the session writes is its workspace's and home's growth
 * over their size at the start: allocated bytes as `du` counts them (hard links once, one
 * filesystem), and names as `find` lists them (files, directories, links: empty files cost no
 * bytes, so only this count sees a loop of them; usage.ts says why not `du --inodes`).
 * The file ceiling is derived from --disk (limits.ts filesForDisk: one per 16 KiB), at most
 * half the free inodes.
 *
 * A walk reads every directory, so it runs only when the filesystems' own counters (statfs:
 * used blocks, used inodes; a cheap system call) grew by half the room left since the last
 * walk of that kind, and both at least every 15 s. Others writing to the same filesystem only make it walk
 * sooner; the walk decides. The poll is paced by the room left: often enough that a writer at
 * the fastest rate seen here cannot use half the room between two polls (every 20 ms near a
 * ceiling, every 250 ms far from both). The container's /tmp is a tmpfs charged to its memory
 * cgroup, so --memory bounds it.
 */
import { countNames, duBytes, filesystemsUsed, grownSince, type FsUsed } from './usage.js';

export { countNames, duBytes };

export interface DiskWatchOptions {
  dirs: string[];
  limitBytes: number;
  limitFiles: number;
  onExceeded: (usage: DiskUsage) => void;
  /** After each walk, with what it counted (the launcher writes it into the session's record for `ps`). */
  onWalk?: (usage: DiskUsage) => void;
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
  /** How long the last walk took (ms): what it counted is as of its start, so a flood adds what it makes meanwhile. */
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

type Kind = 'bytes' | 'files';

/** One walk of the kinds asked for: the counts, the baselines from the first, and which ceiling is passed. */
async function walkOnce(dirs: string[], kinds: Set<Kind>, state: DiskUsage): Promise<void> {
  const began = performance.now();
  const [bytes, files] = await Promise.all([kinds.has('bytes') ? duBytes(dirs) : undefined, kinds.has('files') ? countNames(dirs) : undefined]);
  state.walkMs = Math.round(performance.now() - began);
  state.walks += 1;
  if (bytes !== undefined) {
    state.baselineBytes ??= bytes;
    state.writtenBytes = Math.max(0, bytes - state.baselineBytes);
  }
  if (files !== undefined) {
    state.baselineFiles ??= files;
    state.writtenFiles = Math.max(0, files - state.baselineFiles);
  }
  if (state.exceeded) return;
  if ((state.writtenBytes ?? 0) > state.limitBytes) state.exceeded = 'bytes';
  else if ((state.writtenFiles ?? 0) > state.limitFiles) state.exceeded = 'files';
}

const both = new Set<Kind>(['bytes', 'files']);

/**
 * The walks: one at a time, each of the kinds whose statfs counter grew by half its room (a
 * flood of empty files walks only the names, which is four times cheaper than the bytes), both
 * at the start, every 15 s and at the end.
 */
function walker(options: DiskWatchOptions, state: DiskUsage) {
  const atLastWalk: Record<Kind, Map<number, FsUsed>> = { bytes: filesystemsUsed(options.dirs), files: filesystemsUsed(options.dirs) };
  let lastFullWalkAt = Date.now();
  let walking: Promise<void> | undefined;
  const walk = (kinds: Set<Kind>) =>
    (walking ??= (async () => {
      const before = filesystemsUsed(options.dirs);
      const wasExceeded = state.exceeded;
      try {
        await walkOnce(options.dirs, kinds, state);
        if (state.exceeded && !wasExceeded) options.onExceeded({ ...state });
        options.onWalk?.({ ...state });
      } catch {
        // a failed walk is retried at the next trigger
      } finally {
        for (const kind of kinds) atLastWalk[kind] = before;
        if (kinds.size === 2) lastFullWalkAt = Date.now();
        walking = undefined;
      }
    })());
  /** What grew since each kind's last walk, the room left, and the walk due now (if any). */
  const check = () => {
    const now = filesystemsUsed(options.dirs);
    const grown = { bytes: grownSince(atLastWalk.bytes, now).bytes, inodes: grownSince(atLastWalk.files, now).inodes };
    const room = { bytes: state.limitBytes - (state.writtenBytes ?? 0), inodes: state.limitFiles - (state.writtenFiles ?? 0) };
    const due = new Set<Kind>(Date.now() - lastFullWalkAt >= (options.walkEveryMs ?? 15_000) ? both : []);
    if (grown.bytes >= room.bytes / 2) due.add('bytes');
    if (grown.inodes >= room.inodes / 2) due.add('files');
    return { due, left: { bytes: room.bytes - grown.bytes, inodes: room.inodes - grown.inodes } };
  };
  return { walk, check, walking: () => walking };
}

export function watchDisk(options: DiskWatchOptions): DiskWatch {
  const state: DiskUsage = {
    limitBytes: options.limitBytes, limitFiles: options.limitFiles, writtenBytes: null, writtenFiles: null,
    baselineBytes: null, baselineFiles: null, walks: 0, walkMs: null, mechanism: 'watchdog',
  };
  const w = walker(options, state);
  void w.walk(both);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const poll = () => {
    const { due, left } = w.check();
    if (!w.walking() && !state.exceeded && due.size > 0) void w.walk(due);
    if (stopped || state.exceeded) return;
    timer = setTimeout(poll, options.pollMs ?? pollPeriodMs(left));
    timer.unref();
  };
  poll();
  return {
    usage: () => ({ ...state }),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await w.walking();
      if (!state.exceeded) await w.walk(both);
      return { ...state };
    },
  };
}

/**
 * The disk ceiling (--disk) where the host's filesystem offers no quota for it: a watchdog with
 * two ceilings, bytes and files. What the session writes is its workspace's and home's growth
 * over their size at the start: allocated bytes as `du` counts them (hard links once, one
 * filesystem), and names as `find` lists them (files, directories, links: empty files cost no
 * bytes, so only this count sees a loop of them; a hard link costs no inode, yet is a name).
 * The file ceiling is derived from --disk (limits.ts filesForDisk: one per 16 KiB), at most
 * half the free inodes.
 *
 * Names come from the incremental look (look.ts): a stat per directory, a read of only the
 * directories that changed. Bytes come from `du`: a file that grows moves no directory's
 * timestamps, so only a stat of every file would see it, and du does that fastest; it runs
 * when the filesystems' own counters say bytes grew.
 *
 * What wakes what: a statfs poll of the filesystems (used blocks, used inodes), paced by the room
 * left so that a writer at the fastest rate seen here cannot use half of it between two polls
 * (every 20 ms near a ceiling, up to every 5 s far from both). A counter's growth since a kind's
 * last count wakes that count once it reaches half the room left. A backstop comes on its own
 * clock for what grows no counter (hard links; growth hidden by frees next door): the look at
 * least every 15 s, du at least every 60 s, each stretched so that it costs at most one part in
 * 3 000 of the time (20 ms per minute). Others writing to the same filesystem only make it count
 * sooner; the count decides. The container's /tmp is a tmpfs charged to its memory cgroup,
 * so --memory bounds it.
 */
import { countNames, duBytes, filesystemsUsed, grownSince, hostLookFs, type FsUsed } from './usage.js';
import { look, newLookState, type LookResult, type LookState } from './look.js';

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
  /** A fixed backstop period for both counts, in place of the stretched ones (tests). */
  walkEveryMs?: number;
  /** The look's bound on tracked directories (look.ts defaultMaxDirs). */
  maxDirs?: number;
}

/** The fastest a session wrote here: dd of /dev/zero into the workspace, ~2 GB/s into the page cache. */
const fastestWriteBytesPerMs = (2 * 2 ** 30) / 1000;
/** The fastest a session made files here: a node loop of empty files, 1.87 M in 40 s (~47 000/s). */
const fastestFilesPerMs = 50;
const pollBoundsMs = { min: 20, max: 5_000 };
/** The backstops: no sooner than these, and stretched to cost at most one part in `backstopShare` of the time. */
const backstopMinMs = { bytes: 60_000, files: 15_000 };
const backstopShare = 3_000;

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
  /** How names are counted: the incremental look, or `find` once the look passed its bound on directories. */
  names: 'look' | 'find';
  /** Directories the look tracks (0 after it gave up). */
  dirsTracked: number;
  /** Which ceiling the session passed, once it did. */
  exceeded?: 'bytes' | 'files';
}

export interface DiskWatch {
  usage(): DiskUsage;
  /** Stops polling; returns the final usage after one last walk. */
  stop(): Promise<DiskUsage>;
}

type Kind = 'bytes' | 'files';
const both = new Set<Kind>(['bytes', 'files']);

/** Epoch milliseconds with a fraction: the look compares them with file timestamps and times its stats with them. */
const nowMs = () => performance.timeOrigin + performance.now();

/** Runs a look in its steps, letting the event loop run between them (a first look of a big tree is long). */
async function lookInSteps(lookState: LookState): Promise<LookResult> {
  const steps = look(lookState, hostLookFs, nowMs);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * The names, and what a backstop count of them costs (ms): the look's count and the time of its
 * stats (what it reads is what changed, which any count must read), or find's count and time
 * once the look gave up (and says so in `state.names`).
 */
async function countNamesNow(dirs: string[], lookState: LookState, state: DiskUsage): Promise<[number, number]> {
  const looked = await lookInSteps(lookState);
  state.dirsTracked = lookState.dirs.size;
  if (looked.names !== undefined) return [looked.names, looked.statMs];
  state.names = 'find';
  return await timedMs(() => countNames(dirs));
}

/** Timed: how long `run` took, in ms. */
async function timedMs<T>(run: () => Promise<T>): Promise<[T, number]> {
  const began = performance.now();
  const value = await run();
  return [value, performance.now() - began];
}

/** One count of the kinds asked for: the counts, the baselines from the first, which ceiling is passed, and each kind's time. */
async function walkOnce(dirs: string[], kinds: Set<Kind>, state: DiskUsage, lookState: LookState): Promise<Partial<Record<Kind, number>>> {
  const began = performance.now();
  const [bytes, files] = await Promise.all([
    kinds.has('bytes') ? timedMs(() => duBytes(dirs)) : undefined,
    kinds.has('files') ? countNamesNow(dirs, lookState, state) : undefined,
  ]);
  state.walkMs = Math.round(performance.now() - began);
  state.walks += 1;
  if (bytes !== undefined) {
    state.baselineBytes ??= bytes[0];
    state.writtenBytes = Math.max(0, bytes[0] - state.baselineBytes);
  }
  if (files !== undefined) {
    state.baselineFiles ??= files[0];
    state.writtenFiles = Math.max(0, files[0] - state.baselineFiles);
  }
  if (!state.exceeded) {
    if ((state.writtenBytes ?? 0) > state.limitBytes) state.exceeded = 'bytes';
    else if ((state.writtenFiles ?? 0) > state.limitFiles) state.exceeded = 'files';
  }
  return { ...(bytes ? { bytes: bytes[1] } : {}), ...(files ? { files: files[1] } : {}) };
}

/**
 * The counts: one at a time, each of the kinds whose statfs counter grew by half its room (a
 * flood of empty files counts only the names) or whose backstop is due; both at the start and at
 * the end.
 */
function walker(options: DiskWatchOptions, state: DiskUsage) {
  const lookState = newLookState(options.dirs, options.maxDirs === undefined ? {} : { maxDirs: options.maxDirs });
  /** The filesystems' counters when each kind's last count began: what grew since is compared with the room. */
  const atCount: Record<Kind, Map<number, FsUsed>> = { bytes: filesystemsUsed(options.dirs), files: filesystemsUsed(options.dirs) };
  const lastAt: Record<Kind, number> = { bytes: Date.now(), files: Date.now() };
  const every: Record<Kind, number> = {
    bytes: options.walkEveryMs ?? backstopMinMs.bytes,
    files: options.walkEveryMs ?? backstopMinMs.files,
  };
  let walking: Promise<void> | undefined;
  const walk = (kinds: Set<Kind>) =>
    (walking ??= (async () => {
      const wasExceeded = state.exceeded;
      const began = filesystemsUsed(options.dirs);
      for (const kind of kinds) [atCount[kind], lastAt[kind]] = [began, Date.now()];
      try {
        const took = await walkOnce(options.dirs, kinds, state, lookState);
        for (const kind of kinds)
          if (options.walkEveryMs === undefined) every[kind] = Math.max(backstopMinMs[kind], (took[kind] ?? 0) * backstopShare);
        if (state.exceeded && !wasExceeded) options.onExceeded({ ...state });
        options.onWalk?.({ ...state });
      } catch {
        // a failed count is retried at the next trigger
      } finally {
        walking = undefined;
      }
    })());
  /** What grew since each kind's last count, the room left, and the counts due now (if any). */
  const check = () => {
    const now = filesystemsUsed(options.dirs);
    const grown = { bytes: grownSince(atCount.bytes, now).bytes, files: grownSince(atCount.files, now).inodes };
    const room = { bytes: state.limitBytes - (state.writtenBytes ?? 0), inodes: state.limitFiles - (state.writtenFiles ?? 0) };
    const due = new Set<Kind>();
    if (grown.bytes >= room.bytes / 2 || Date.now() - lastAt.bytes >= every.bytes) due.add('bytes');
    if (grown.files >= room.inodes / 2 || Date.now() - lastAt.files >= every.files) due.add('files');
    return { due, left: { bytes: room.bytes - grown.bytes, inodes: room.inodes - grown.files } };
  };
  return { walk, check, walking: () => walking };
}

export function watchDisk(options: DiskWatchOptions): DiskWatch {
  const state: DiskUsage = {
    limitBytes: options.limitBytes,
    limitFiles: options.limitFiles,
    writtenBytes: null,
    writtenFiles: null,
    baselineBytes: null,
    baselineFiles: null,
    walks: 0,
    walkMs: null,
    mechanism: 'watchdog',
    names: 'look',
    dirsTracked: 0,
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

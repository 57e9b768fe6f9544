/**
 * The incremental look that counts names for the file ceiling: the pure core (what a look reads
 * is passed in as `LookFs`). A directory's entries change only when its mtime or ctime moves, so
 * a look lstat()s each directory it knows and re-reads (readdir) only those whose stat moved, new
 * ones, and those it read too soon after they changed to trust their timestamps (a change in the
 * same clock tick as the read leaves the mtime as it was: such a directory is "racy" and is read
 * again next time, as git does for its index). A quiet workspace of 1 000 000 files in 1 000
 * directories costs 1 000 lstat calls, not a read of a million names.
 *
 * Names are counted as `find -xdev` lists them: each starting directory and every entry below it,
 * a hard link once per name (links cost no inode, yet each name is one more entry), an entry that
 * is another filesystem's mount point listed but not entered. Nothing is opened but directories:
 * a FIFO or a device is a name in its directory's listing, never a file to read.
 *
 * Everything is iterative (a stack, no recursion: a 10 000-level tree is a long list, not a deep
 * call stack), and memory is bounded: at most `maxDirs` directories are tracked, their paths at
 * most `maxPathChars` long added up; past either the look gives up (`overflow`) and the caller
 * walks the whole tree with find instead. It gives up too on
 * a path longer than the kernel takes (PATH_MAX): the look names directories by their full path,
 * where find walks down one level at a time and reaches any depth.
 */

export interface DirStat {
  dev: number;
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  isDirectory: boolean;
}

/** An entry as readdir gives it (node's Dirent is one): the kernel's d_type says what it is, no stat needed. */
export interface DirEntry {
  name: string;
  isDirectory(): boolean;
}

/** What a look may do to the filesystem: stat a path (undefined: gone) and list a directory (undefined: gone or unreadable). */
export interface LookFs {
  lstat(path: string): DirStat | undefined;
  readdir(path: string): DirEntry[] | undefined;
}

interface DirRecord {
  dev: number;
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  /** Its direct entries, every kind. */
  names: number;
  /** The names of its subdirectories on the same filesystem, each tracked under `path/name`. */
  children: string[];
  /** Read within `racyMs` of its last change: read again at the next look whatever its stat says. */
  racy: boolean;
  /** The starting directory it is under (a shared string: no memory per record). */
  root: string;
}

export interface LookState {
  roots: string[];
  /** Each root's filesystem, from its first stat (entries on another are not entered). */
  rootDev: Map<string, number>;
  dirs: Map<string, DirRecord>;
  /** The sum of `names` over `dirs`: kept as records change, so a look never adds them all up. */
  entries: number;
  maxDirs: number;
  /** Paths longer than this make the look give up (the kernel's limit; tests raise it to try deep trees in memory). */
  maxPathBytes: number;
  /** The length of every tracked path added up, and its bound: deep trees cost memory in their paths, not their count. */
  pathChars: number;
  maxPathChars: number;
  overflow: boolean;
}

export interface LookResult {
  /** Names under the roots, the roots included (find's count); undefined once overflowed. */
  names: number | undefined;
  statted: number;
  read: number;
  /** How long the stats of the known directories took (ms, by `nowMs`): what a look of a quiet tree costs. */
  statMs: number;
  overflow: boolean;
}

/** The default bound on tracked directories: their records take 250-370 bytes each as measured, about 36 MiB at most (disk-look.unit.test.ts measures it). */
export const defaultMaxDirs = 100_000;
/** The default bound on their paths' length added up: 16 MiB of one-byte strings. */
export const defaultMaxPathChars = 16 * 2 ** 20;
/** The longest path the kernel takes, its NUL not counted (PATH_MAX is 4 096 on Linux). */
export const maxPathBytes = 4_095;
/** A directory read this close to its last change (ms) is read again: timestamps tick coarsely. */
export const racyMs = 1_000;
/** How many directories a look handles before it lets the caller's event loop run. */
export const stepDirs = 256;

export type LookBounds = Partial<Pick<LookState, 'maxDirs' | 'maxPathBytes' | 'maxPathChars'>>;

export function newLookState(roots: string[], bounds: LookBounds = {}): LookState {
  return {
    roots: [...roots],
    rootDev: new Map(),
    dirs: new Map(),
    entries: 0,
    pathChars: 0,
    overflow: false,
    maxDirs: bounds.maxDirs ?? defaultMaxDirs,
    maxPathBytes: bounds.maxPathBytes ?? maxPathBytes,
    maxPathChars: bounds.maxPathChars ?? defaultMaxPathChars,
  };
}

const join = (dir: string, name: string) => (dir.endsWith('/') ? `${dir}${name}` : `${dir}/${name}`);

/** Forgets `path` and every directory below it (iteratively). */
function drop(state: LookState, path: string): void {
  const stack = [path];
  for (let p = stack.pop(); p !== undefined; p = stack.pop()) {
    const rec = state.dirs.get(p);
    if (!rec) continue;
    state.dirs.delete(p);
    state.entries -= rec.names;
    state.pathChars -= p.length;
    for (const c of rec.children) stack.push(join(p, c));
  }
}

/** Which directory a root's entry is on: the root's own device, from its first stat. */
function deviceOf(state: LookState, path: string, root: string, st: DirStat): boolean {
  if (path === root && !state.rootDev.has(root)) state.rootDev.set(root, st.dev);
  return st.dev === state.rootDev.get(root);
}

/**
 * Reads one directory: its record replaced, subdirectories that are new (or were not tracked)
 * pushed onto `stack`, those gone forgotten with what was below them.
 */
function readDir(state: LookState, fs: LookFs, path: string, root: string, nowMs: number, stack: [string, string][]): boolean {
  const st = fs.lstat(path);
  const old = state.dirs.get(path);
  if (!st || !st.isDirectory || !deviceOf(state, path, root, st)) {
    drop(state, path);
    return false;
  }
  if (old && (old.dev !== st.dev || old.ino !== st.ino)) drop(state, path);
  const listing = fs.readdir(path);
  if (!listing) {
    drop(state, path);
    return false;
  }
  const kept = state.dirs.get(path)?.children ?? [];
  const children = listing.filter((e) => e.isDirectory()).map((e) => e.name);
  const now = new Set(children);
  for (const c of kept) if (!now.has(c)) drop(state, join(path, c));
  for (const c of children) if (!state.dirs.has(join(path, c))) stack.push([join(path, c), root]);
  const racy = nowMs - Math.max(st.mtimeMs, st.ctimeMs) < racyMs;
  state.entries += listing.length - (state.dirs.get(path)?.names ?? 0);
  if (!state.dirs.has(path)) state.pathChars += path.length;
  state.dirs.set(path, { dev: st.dev, ino: st.ino, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, names: listing.length, children, racy, root });
  return true;
}

/** The directories whose stat moved (or that are racy, or replaced): each to be read again. */
function* changedDirs(state: LookState, fs: LookFs, counts: { statted: number }): Generator<void, [string, string][]> {
  const changed: [string, string][] = state.roots.filter((r) => !state.dirs.has(r)).map((r) => [r, r]);
  // Deleting from a Map while iterating it is safe: what is deleted is not visited.
  for (const [path, rec] of state.dirs) {
    const st = fs.lstat(path);
    counts.statted += 1;
    if (counts.statted % stepDirs === 0) yield;
    if (!st || st.dev !== rec.dev || st.ino !== rec.ino || !st.isDirectory) {
      // Gone or replaced: forget what was there; a directory now at that path is read anew
      // (its parent's re-read would not, since the name is still tracked).
      drop(state, path);
      if (st?.isDirectory || state.roots.includes(path)) changed.push([path, rec.root]);
      continue;
    }
    if (rec.racy || st.mtimeMs !== rec.mtimeMs || st.ctimeMs !== rec.ctimeMs) changed.push([path, rec.root]);
  }
  return changed;
}

/**
 * One look, in steps: it yields every `stepDirs` directories so that its caller can let other
 * work run, and returns the count. The first look reads everything (the baseline).
 */
export function* look(state: LookState, fs: LookFs, nowMs: () => number): Generator<void, LookResult> {
  const counts = { statted: 0, read: 0, statMs: 0 };
  if (state.overflow) return { names: undefined, ...counts, overflow: true };
  const began = nowMs();
  const stack = yield* changedDirs(state, fs, counts);
  counts.statMs = nowMs() - began;
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    // A path pushed twice (changed, then found untracked by its re-read parent) is read twice: harmless.
    const tooLong = Buffer.byteLength(item[0]) > state.maxPathBytes;
    if (!tooLong) readDir(state, fs, item[0], item[1], nowMs(), stack);
    counts.read += 1;
    if (tooLong || state.dirs.size > state.maxDirs || state.pathChars > state.maxPathChars) {
      state.overflow = true;
      state.dirs.clear();
      state.entries = 0;
      state.pathChars = 0;
      return { names: undefined, ...counts, overflow: true };
    }
    if (counts.read % stepDirs === 0) yield;
  }
  const roots = state.roots.filter((r) => state.dirs.has(r)).length;
  return { names: roots + state.entries, ...counts, overflow: false };
}

/** Runs a look to its end at once (tests, and callers that need no steps). */
export function lookNow(state: LookState, fs: LookFs, nowMs: () => number): LookResult {
  const it = look(state, fs, nowMs);
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
  }
}

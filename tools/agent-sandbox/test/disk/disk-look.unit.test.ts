// The incremental look's pure core on a filesystem held in memory: a directory whose stat moved
// is read again and one whose stat did not is not; a directory read in the same clock tick as its
// change is read again next time; a 10 000-level tree is counted without recursion (and with the
// kernel's PATH_MAX, which such a tree's paths pass, the look hands over to find); the bound on
// tracked directories gives up (overflow) instead of growing, and what the records cost at the
// default bound is measured; a FIFO is a name in a listing, never a path read.
import t from 'tap';
import { lookNow, newLookState, defaultMaxDirs, type LookFs, type DirStat } from '../../dist/index.js';

interface Node {
  stat: DirStat;
  children?: Map<string, Node>;
}

/** A tree in memory with a clock: every change moves the parent directory's mtime and ctime, as the kernel does. */
function memoryFs() {
  let ino = 1;
  let clock = 1_000_000;
  const node = (isDirectory: boolean): Node => ({
    stat: { dev: 1, ino: ino++, mtimeMs: clock, ctimeMs: clock, isDirectory },
    ...(isDirectory ? { children: new Map() } : {}),
  });
  const nodes = new Map<string, Node>([['/r', node(true)]]);
  const calls = { lstat: [] as string[], readdir: [] as string[] };
  const split = (path: string) => [path.slice(0, path.lastIndexOf('/')), path.slice(path.lastIndexOf('/') + 1)] as const;
  const touchParent = (path: string) => {
    const parent = nodes.get(split(path)[0])!;
    parent.stat = { ...parent.stat, mtimeMs: clock, ctimeMs: clock };
    return parent;
  };
  const fs: LookFs = {
    lstat: (path) => (calls.lstat.push(path), nodes.get(path)?.stat),
    readdir: (path) => {
      calls.readdir.push(path);
      const n = nodes.get(path);
      return n?.children ? [...n.children].map(([name, c]) => ({ name, isDirectory: () => c.stat.isDirectory })) : undefined;
    },
  };
  const forget = (path: string) => {
    for (const stack = [path]; stack.length > 0;) {
      const p = stack.pop()!;
      for (const name of nodes.get(p)?.children?.keys() ?? []) stack.push(`${p}/${name}`);
      nodes.delete(p);
    }
  };
  return {
    fs,
    calls,
    now: () => clock,
    tick: (ms: number) => (clock += ms),
    add: (path: string, isDirectory: boolean) => {
      const n = node(isDirectory);
      nodes.set(path, n);
      touchParent(path).children!.set(split(path)[1], n);
      return n;
    },
    remove: (path: string) => (touchParent(path).children!.delete(split(path)[1]), forget(path)),
    reset: () => ((calls.lstat = []), (calls.readdir = [])),
  };
}

t.test('a directory whose stat moved is read again; the others are only statted', async (t) => {
  const m = memoryFs();
  for (const d of ['a', 'b', 'c']) {
    m.add(`/r/${d}`, true);
    for (let f = 0; f < 10; f += 1) m.add(`/r/${d}/f${f}`, false);
  }
  m.tick(5_000);
  const state = newLookState(['/r']);
  t.equal(lookNow(state, m.fs, m.now).names, 1 + 3 + 30, 'the baseline: the root, 3 directories, 30 files');
  m.tick(5_000);
  m.reset();
  t.equal(lookNow(state, m.fs, m.now).names, 34, 'nothing changed, the same count');
  t.same(m.calls.readdir, [], 'and nothing was read');
  t.equal(m.calls.lstat.length, 4, 'only a stat per directory');
  m.add('/r/b/new', false);
  m.add('/r/b/sub', true);
  m.add('/r/b/sub/deeper', false);
  m.remove('/r/c/f0');
  m.tick(5_000);
  m.reset();
  t.equal(lookNow(state, m.fs, m.now).names, 34 + 3 - 1, 'the new names are counted, the removed one is not');
  t.same(m.calls.readdir.sort(), ['/r/b', '/r/b/sub', '/r/c'], 'only the changed directories and the new one were read');
  m.remove('/r/b/sub/deeper');
  m.remove('/r/b/sub');
  m.tick(5_000);
  t.equal(lookNow(state, m.fs, m.now).names, 34, 'a directory removed takes what it held with it');
  t.equal(state.dirs.size, 4, 'and is no longer tracked');
});

t.test('a directory read in the same clock tick as its change is read again, whatever its stat says', async (t) => {
  const m = memoryFs();
  m.add('/r/a', true);
  const state = newLookState(['/r']);
  t.equal(lookNow(state, m.fs, m.now).names, 2);
  // The clock has not moved: this add leaves /r/a's mtime exactly as the look recorded it.
  m.add('/r/a/x', false);
  t.equal(m.fs.lstat('/r/a')!.mtimeMs, m.now(), 'same tick');
  t.equal(lookNow(state, m.fs, m.now).names, 3, 'the racy directory was read again and the new name counted');
  m.tick(5_000);
  lookNow(state, m.fs, m.now);
  m.reset();
  lookNow(state, m.fs, m.now);
  t.same(m.calls.readdir, [], 'once its change is old enough, its stat is trusted again');
});

t.test('a 10 000-level tree: no recursion to overflow, and every level counted', async (t) => {
  const m = memoryFs();
  let path = '/r';
  for (let i = 0; i < 10_000; i += 1) m.add((path = `${path}/d`), true);
  m.add(`${path}/leaf`, false);
  m.tick(5_000);
  t.ok(
    lookNow(newLookState(['/r'], { maxDirs: 20_000 }), m.fs, m.now).overflow,
    "with the kernel's PATH_MAX the look gives up (find reaches any depth)",
  );
  const state = newLookState(['/r'], { maxDirs: 20_000, maxPathBytes: Infinity, maxPathChars: Infinity });
  const first = lookNow(state, m.fs, m.now);
  t.equal(first.names, 1 + 10_000 + 1, 'the root, 10 000 directories and the leaf');
  m.add(`${path}/leaf2`, false);
  m.tick(5_000);
  m.reset();
  t.equal(lookNow(state, m.fs, m.now).names, 10_003, 'a name added at the bottom is found');
  t.ok(m.calls.readdir.length === 1 && m.calls.readdir[0] === path, 'by reading only the bottom directory');
  m.remove('/r/d');
  m.tick(5_000);
  t.equal(lookNow(state, m.fs, m.now).names, 1, 'removing the top forgets all 10 000 levels');
  t.equal(state.dirs.size, 1);
});

t.test('a FIFO (or any special file) is a name in its directory, never a path the look reads', async (t) => {
  const m = memoryFs();
  m.add('/r/pipe', false);
  m.tick(5_000);
  t.equal(lookNow(newLookState(['/r']), m.fs, m.now).names, 2);
  t.same(m.calls.readdir, ['/r'], 'only the directory was listed');
  t.notOk(m.calls.lstat.includes('/r/pipe'), 'not even statted: the listing said it is not a directory');
});

t.test('the bound on tracked directories: past it the look gives up and says so, keeping nothing', async (t) => {
  const m = memoryFs();
  for (let d = 0; d < 5_000; d += 1) m.add(`/r/d${d}`, true);
  m.tick(5_000);
  const state = newLookState(['/r'], { maxDirs: 1_000 });
  const r = lookNow(state, m.fs, m.now);
  t.ok(r.overflow, 'overflow');
  t.equal(r.names, undefined, 'no count: the caller walks the tree instead');
  t.equal(state.dirs.size, 0, 'and the records are freed');
  t.ok(lookNow(state, m.fs, m.now).overflow, 'it stays given up');
});

t.test(`what the records cost at the default bound (${defaultMaxDirs} directories)`, async (t) => {
  const m = memoryFs();
  for (let d = 0; d < defaultMaxDirs / 100; d += 1) {
    m.add(`/r/project-directory-${d}`, true);
    for (let e = 0; e < 99; e += 1) m.add(`/r/project-directory-${d}/src-${e}`, true);
  }
  m.tick(5_000);
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  const state = newLookState(['/r'], { maxDirs: defaultMaxDirs + 1 });
  t.equal(lookNow(state, m.fs, m.now).names, 1 + defaultMaxDirs);
  global.gc?.();
  const perDir = (process.memoryUsage().heapUsed - before) / state.dirs.size;
  t.comment(`${Math.round(perDir)} bytes per tracked directory, ${Math.round((perDir * defaultMaxDirs) / 2 ** 20)} MiB at the bound`);
  t.ok(perDir < 600, 'under 600 bytes a directory (60 MiB at the bound would be too much for a launcher)');
});

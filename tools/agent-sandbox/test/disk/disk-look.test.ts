// The incremental look on this host's filesystem: it counts what find counts (hard links once per
// name, symlinks, a FIFO listed without being opened) at the start and after changes; a flood of
// hard links, which moves no statfs counter, is caught by the look's backstop; a flood of
// directories past the look's bound hands the count to find and still stops the session.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { appendFileSync, linkSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { countNames, hostLookFs, lookNow, newLookState, watchDisk, type DiskUsage } from '../../dist/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Past the look's racy window, so that a look trusts the timestamps it reads. */
const settle = () => sleep(1_100);

t.test('the look counts what find counts, at the start and after changes, and never opens a FIFO', async (t) => {
  const base = await tempDir(t, 'disk-look-');
  const [ws, home] = ['ws', 'home'].map((d) => path.join(base, d)) as [string, string];
  for (let d = 0; d < 20; d += 1) {
    mkdirSync(path.join(ws, `d${d}`, 'sub'), { recursive: true });
    for (let f = 0; f < 10; f += 1) writeFileSync(path.join(ws, `d${d}`, `f${f}`), 'x');
  }
  mkdirSync(home);
  linkSync(path.join(ws, 'd0', 'f0'), path.join(home, 'link-to-f0'));
  symlinkSync('/nowhere', path.join(home, 'dangling'));
  // A FIFO with no writer: opening it to read would block the look for ever.
  t.equal(spawnSync('mkfifo', [path.join(ws, 'd1', 'pipe')]).status, 0, 'mkfifo');
  const state = newLookState([ws, home]);
  const first = lookNow(state, hostLookFs, Date.now);
  t.equal(first.names, await countNames([ws, home]), `the baseline: ${first.names} names, as find lists them`);
  // Each directory was read within a second of its making: racy, so the next look reads it again.
  await settle();
  t.equal(lookNow(state, hostLookFs, Date.now).read, state.dirs.size, 'racy directories are read again');
  for (let i = 0; i < 30; i += 1) linkSync(path.join(ws, 'd2', 'f1'), path.join(ws, 'd3', `hard-${i}`));
  appendFileSync(path.join(ws, 'd4', 'f0'), 'more'); // a file's growth: no name added
  rmSync(path.join(ws, 'd5'), { recursive: true });
  renameSync(path.join(ws, 'd6'), path.join(ws, 'd7', 'sub', 'd6-moved'));
  mkdirSync(path.join(ws, 'd8', 'sub', 'new', 'deeper'), { recursive: true });
  const second = lookNow(state, hostLookFs, Date.now);
  t.equal(second.names, await countNames([ws, home]), `after links, a removal, a rename and new directories: ${second.names}, as find`);
  t.equal(
    second.names! - first.names!,
    30 - 12 + 2,
    '30 hard links are 30 names; the removed directory took its 12 with it; 2 new directories',
  );
  t.ok(second.read < 10, `only the changed directories were read (${second.read} of ${state.dirs.size})`);
  await settle();
  t.ok(lookNow(state, hostLookFs, Date.now).read < 10, 'the directories changed just before the last look are read once more');
  const quiet = lookNow(state, hostLookFs, Date.now);
  t.equal(quiet.read, 0, 'a quiet tree: nothing read');
  t.equal(quiet.statted, state.dirs.size, `a stat per directory (${quiet.statted})`);
});

/** Runs `make(i)` for i from 0 until `stop()` or `max`, yielding now and then so the watchdog can poll. */
async function flood(make: (i: number) => void, max: number, stopped: () => boolean) {
  for (let i = 0; i < max && !stopped(); i += 1) {
    make(i);
    if (i % 200 === 0) await sleep(5);
  }
}

t.test("a flood of hard links moves no statfs counter: the look's backstop counts each name and stops it", async (t) => {
  const ws = path.join(await tempDir(t, 'disk-look-'), 'ws');
  mkdirSync(ws);
  writeFileSync(path.join(ws, 'target'), 'x');
  const seen: DiskUsage[] = [];
  const watch = watchDisk({ dirs: [ws], limitBytes: 2 ** 30, limitFiles: 1_000, walkEveryMs: 300, onExceeded: (u) => seen.push(u) });
  await flood(
    (i) => linkSync(path.join(ws, 'target'), path.join(ws, `l${i}`)),
    20_000,
    () => seen.length > 0,
  );
  const final = await watch.stop();
  t.equal(seen[0]?.exceeded, 'files', 'the file ceiling is the one passed');
  t.ok(seen[0]!.writtenFiles! > 1_000 && seen[0]!.writtenFiles! < 20_000, `by hard links alone (${seen[0]?.writtenFiles} names)`);
  t.equal(final.names, 'look', 'counted by the look');
});

t.test("a flood of directories past the look's bound: find takes over, says so, and the ceiling still holds", async (t) => {
  const ws = path.join(await tempDir(t, 'disk-look-'), 'ws');
  mkdirSync(ws);
  const seen: DiskUsage[] = [];
  const walks: DiskUsage[] = [];
  const watch = watchDisk({
    dirs: [ws],
    limitBytes: 2 ** 30,
    limitFiles: 3_000,
    maxDirs: 500,
    walkEveryMs: 300,
    onExceeded: (u) => seen.push(u),
    onWalk: (u) => walks.push(u),
  });
  await flood(
    (i) => mkdirSync(path.join(ws, `d${i}`)),
    50_000,
    () => seen.length > 0,
  );
  const final = await watch.stop();
  t.ok(
    walks.some((w) => w.names === 'look' && w.dirsTracked > 0),
    'the look counted while under its bound',
  );
  t.equal(final.names, 'find', 'then said it handed over to find');
  t.equal(final.dirsTracked, 0, 'and keeps no records');
  t.equal(seen[0]?.exceeded, 'files', 'the file ceiling still stopped the flood');
  t.ok(seen[0]!.writtenFiles! < 50_000, `before it ended (${seen[0]?.writtenFiles} directories)`);
});

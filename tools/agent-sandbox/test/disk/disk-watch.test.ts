// The disk ceiling's watchdog on its own, with real writers on this host's filesystem: a writer
// in the watched directories is caught once, just over the ceiling; a loop of empty files is
// caught by the file ceiling (it costs no bytes); so is one that appends to a file it had (which
// moves no directory's timestamps); a writer beside them on the same filesystem
// makes it look (walk) but never stops the session.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { filesCeiling, watchDisk, type DiskUsage } from '../../dist/index.js';

const MiB = 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** dd of 8 MiB files into `dir` until `stop` is called, or `maxFiles` are written. */
function writer(dir: string, maxFiles: number) {
  const child = spawn(
    'sh',
    ['-c', `i=0; while [ $i -lt ${maxFiles} ]; do dd if=/dev/zero of=${dir}/fill-$i bs=1M count=8 status=none; i=$((i+1)); done`],
    { stdio: 'ignore' },
  );
  const done = new Promise<void>((r) => child.on('exit', () => r()));
  return { stop: () => child.kill('SIGKILL'), done };
}

t.test('a writer in a watched directory is caught once, over the ceiling and near it', async (t) => {
  const base = await tempDir(t, 'disk-watch-');
  const [ws, home] = ['ws', 'home'].map((d) => path.join(base, d));
  for (const d of [ws!, home!]) mkdirSync(d);
  const seen: DiskUsage[] = [];
  const w = writer(ws!, 64); // 512 MiB at most
  const watch = watchDisk({ dirs: [ws!, home!], limitBytes: 64 * MiB, limitFiles: 1_000_000, onExceeded: (u) => (seen.push(u), w.stop()) });
  await w.done;
  const final = await watch.stop();
  t.equal(seen.length, 1, 'onExceeded ran once');
  t.ok(seen[0]!.writtenBytes! > 64 * MiB, `it saw ${seen[0]?.writtenBytes} bytes written, over 64 MiB`);
  // Not a speed figure (those are the bench's, section 8): a watchdog that waited for its 15 s walk would let all 512 MiB through.
  t.ok(
    seen[0]!.writtenBytes! < 512 * MiB,
    `and stopped the writer before it wrote all it would (${Math.round(seen[0]!.writtenBytes! / MiB)} MiB)`,
  );
  t.ok(final.baselineBytes !== null && final.walks >= 2, `a baseline walk and at least one more (${final.walks})`);
  t.equal(seen[0]!.exceeded, 'bytes', 'the byte ceiling is the one passed');
});

t.test('a writer that appends to one file it had (no directory changes, no new inode) is caught by the bytes', async (t) => {
  const ws = path.join(await tempDir(t, 'disk-watch-'), 'ws');
  mkdirSync(ws);
  writeFileSync(path.join(ws, 'log'), 'start\n');
  const seen: DiskUsage[] = [];
  const child = spawn(
    'sh',
    [
      '-c',
      `i=0; while [ $i -lt 64 ]; do dd if=/dev/zero of=${ws}/log bs=1M count=8 oflag=append conv=notrunc status=none; i=$((i+1)); done`,
    ],
    { stdio: 'ignore' },
  );
  const done = new Promise<void>((r) => child.on('exit', () => r()));
  const watch = watchDisk({
    dirs: [ws],
    limitBytes: 64 * MiB,
    limitFiles: 1_000_000,
    onExceeded: (u) => (seen.push(u), child.kill('SIGKILL')),
  });
  await done;
  await watch.stop();
  t.equal(seen[0]?.exceeded, 'bytes', 'the byte ceiling is the one passed');
  t.ok(
    seen[0]!.writtenBytes! > 64 * MiB && seen[0]!.writtenBytes! < 512 * MiB,
    `and the writer stopped before its end (${Math.round(seen[0]!.writtenBytes! / MiB)} MiB)`,
  );
});

t.test('a writer beside the watched directories, on the same filesystem, never stops the session', async (t) => {
  const base = await tempDir(t, 'disk-watch-');
  const [ws, other] = ['ws', 'other'].map((d) => path.join(base, d));
  for (const d of [ws!, other!]) mkdirSync(d);
  let exceeded = false;
  const watch = watchDisk({ dirs: [ws!], limitBytes: 64 * MiB, limitFiles: 1_000_000, onExceeded: () => (exceeded = true) });
  await sleep(300);
  await writer(other!, 24).done; // 192 MiB next door
  await sleep(500);
  const final = await watch.stop();
  t.notOk(exceeded, 'not over the ceiling');
  t.equal(final.writtenBytes, 0, 'the session wrote nothing');
  t.ok(final.walks >= 3, `the filesystem's growth made it walk (${final.walks} walks: baseline, triggered, final)`);
});

/** Empty files in `dir` as fast as node makes them, until killed (at most `max`). */
function fileLoop(dir: string, max: number) {
  const script = `const fs = require('fs'); for (let i = 0; i < ${max}; i += 1) fs.closeSync(fs.openSync(${JSON.stringify(dir)} + '/e' + i, 'w'));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
  const done = new Promise<void>((r) => child.on('exit', () => r()));
  return { stop: () => child.kill('SIGKILL'), done };
}

t.test('a loop of empty files is caught by the file ceiling: no bytes to see, the count of names passes it', async (t) => {
  const base = await tempDir(t, 'disk-watch-');
  const ws = path.join(base, 'ws');
  mkdirSync(ws);
  const seen: DiskUsage[] = [];
  const w = fileLoop(ws, 200_000);
  const watch = watchDisk({ dirs: [ws], limitBytes: 1024 * MiB, limitFiles: 5_000, onExceeded: (u) => (seen.push(u), w.stop()) });
  await w.done;
  const final = await watch.stop();
  t.equal(seen.length, 1, 'onExceeded ran once');
  t.equal(seen[0]!.exceeded, 'files', 'the file ceiling is the one passed');
  t.ok(seen[0]!.writtenFiles! > 5_000, `it saw ${seen[0]?.writtenFiles} files made, over 5 000`);
  t.ok(seen[0]!.writtenBytes! < 64 * MiB, `while the bytes stayed far below their ceiling (${seen[0]?.writtenBytes})`);
  t.ok(seen[0]!.writtenFiles! < 200_000, `and it stopped the loop before it made all it would`);
  t.equal(final.exceeded, 'files');
});

t.test('the file ceiling is one file per 16 KiB of --disk, at most half the free inodes', async (t) => {
  const { filesForDisk } = await import('@agent-sandbox/shared/limits');
  t.equal(filesForDisk(8 * 1024 * MiB), 524_288, '8g');
  t.equal(filesForDisk(1024 * MiB), 65_536, '1g');
  t.equal(filesCeiling(65_536, 100_000), 50_000, 'half the free inodes when that is less');
  t.equal(filesCeiling(65_536, undefined), 65_536, 'a filesystem without an inode count: the rule');
});

// podman's scratch working directories carry their maker's pid, so a process killed while
// podman ran leaves a directory the next launcher start can tell is an orphan and remove.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { podmanScratchDir, sweepScratchDirs } from '../dist/podman.js';

/** os.tmpdir() reads TMPDIR at each call: point it at a directory of the test's own. */
function ownTmp(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'scratch-sweep-test-'));
  const before = process.env['TMPDIR'];
  process.env['TMPDIR'] = dir;
  t.teardown(() => {
    if (before === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = before;
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** A pid that existed and has exited (and was reaped). */
function deadPid(): number {
  const r = spawnSync('sh', ['-c', 'echo $$']);
  return Number(r.stdout.toString().trim());
}

t.test("a scratch directory is named with this process's pid and removed by its owner", async (t) => {
  const tmp = ownTmp(t);
  const scratch = podmanScratchDir();
  t.equal(path.dirname(scratch.dir), tmp);
  t.match(path.basename(scratch.dir), new RegExp(`^agent-sandbox-podman-${process.pid}-`));
  scratch.remove();
  t.notOk(existsSync(scratch.dir));
});

t.test('the sweep removes the directories of dead pids only, with what they hold', async (t) => {
  const tmp = ownTmp(t);
  const dead = path.join(tmp, `agent-sandbox-podman-${deadPid()}-abc123`);
  mkdirSync(dead);
  writeFileSync(path.join(dead, 'oom'), ''); // what conmon leaves there on an OOM kill
  const mine = podmanScratchDir();
  const alive = path.join(tmp, `agent-sandbox-podman-1-xyz789`); // pid 1 always exists
  mkdirSync(alive);
  const legacy = path.join(tmp, 'agent-sandbox-podman-Qw3rTy'); // no pid: an older build's, not ours to judge
  mkdirSync(legacy);
  const other = path.join(tmp, 'unrelated-99999999-dir');
  mkdirSync(other);
  t.equal(sweepScratchDirs(), 1, 'one directory removed');
  t.notOk(existsSync(dead), "the dead pid's directory is gone");
  t.ok(existsSync(mine.dir), "this live process's own is kept");
  t.ok(existsSync(alive), "a live pid's is kept");
  t.ok(existsSync(legacy), 'a name without a pid is kept');
  t.ok(existsSync(other), 'an unrelated name is kept');
  mine.remove();
});

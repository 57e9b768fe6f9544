// A session whose owner died without cleaning up (SIGKILL) leaves its parent cgroup; the next
// session's cleanup removes it, and never a parent whose owner lives, one still holding a
// task, or a record-less one younger than the grace period. A cleanup that finds its parent
// still busy keeps its owner record, so the parent is swept once that owner has exited; the
// launcher waits for the parent to empty first (untilParentEmpty). Real cgroups on this host.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { cgroupManager } from '@agent-sandbox/shared';
import { cgroupLayout, parentPath, removeParent } from '../../dist/cgroup/cgroup-tree.js';
import { untilParentEmpty } from '../../dist/cgroup/parent-empty.js';
import { prepareAttribution } from '../../dist/attribute/prepare.js';
import { ownerDir, sweepStaleParents } from '../../dist/cgroup/stale-parents.js';

const prepareModule = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'attribute', 'prepare.js');
const isRoot = process.getuid?.() === 0;
// With systemd the parent is a slice systemd makes only once a container starts in it (and
// stops with systemctl); this file proves the sweep of cgroupfs parents, made by prepare itself.
const skip = !isRoot
  ? 'needs root (cgroupfs parents under /sys/fs/cgroup)'
  : cgroupManager() === 'systemd'
    ? 'systemd host: session parents are slices, not made by prepare'
    : false;
const newId = (label: string) => `astest-sweep-${label}-${randomBytes(3).toString('hex')}`;
const layoutOf = (id: string) => cgroupLayout(parentPath(id));
const exists = (id: string) => layoutOf(id).all.some((dir) => existsSync(dir));

/** Whatever a test made is gone at its end, also on failure. */
function removeAtEnd(t: { teardown(fn: () => unknown): void }, id: string) {
  t.teardown(() => {
    removeParent(layoutOf(id), 3000);
  });
}

/** A process that prepares `id` and is then killed with SIGKILL, as a killed launcher would be. */
async function preparedThenKilled(id: string): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `import(${JSON.stringify(prepareModule)}).then((m) => { m.prepareAttribution({ sessionId: ${JSON.stringify(id)} }); console.log('ready'); setInterval(() => {}, 1000); })`,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
    child.on('exit', (code) => reject(new Error(`the preparing process exited early (${code})`)));
  });
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/**
 * Sweeps `id` until it is swept, up to 2 s: the kernel lets go of an exited task's cgroup
 * asynchronously. `now` as sweepStaleParents takes it.
 */
function sweptOnceLetGo(id: string, now?: number): string[] {
  let swept: string[] = [];
  for (let i = 0; i < 20 && !swept.includes(id); i++) {
    swept = sweepStaleParents({ ids: [id], ...(now === undefined ? {} : { now }) });
    if (!swept.includes(id)) spawnSync('sleep', ['0.1']);
  }
  return swept;
}

t.test("a killed owner's parent is swept by the next cleanup; a live session's is not", { skip }, async (t) => {
  const dead = newId('dead');
  const live = newId('live');
  const next = newId('next');
  for (const id of [dead, live, next]) removeAtEnd(t, id);
  await preparedThenKilled(dead);
  t.ok(exists(dead), 'the killed owner left its parent');
  t.ok(existsSync(path.join(ownerDir(), dead)), 'and its owner record');
  const livePrepared = prepareAttribution({ sessionId: live });
  t.teardown(() => livePrepared.cleanup());
  const nextPrepared = prepareAttribution({ sessionId: next });
  t.same(nextPrepared.cleanup(), [], 'the next session cleans up after itself');
  t.notOk(exists(dead), "the dead owner's parent is gone from every hierarchy");
  t.notOk(existsSync(path.join(ownerDir(), dead)), 'and its owner record');
  t.ok(exists(live), "the live session's parent stays");
  t.ok(existsSync(path.join(ownerDir(), live)), 'and its owner record');
});

t.test('a parent with no owner record is left until the grace period has passed', { skip }, async (t) => {
  const id = newId('norecord');
  removeAtEnd(t, id);
  for (const dir of new Set(Object.values(layoutOf(id).dirs))) mkdirSync(dir, { recursive: true });
  // Only this test's id: other tests' parents (made by podman itself, record-less) run alongside.
  t.same(sweepStaleParents({ ids: [id] }), [], 'young: left alone (it may be a prepare in progress)');
  t.ok(exists(id));
  t.same(sweepStaleParents({ ids: [id], now: Date.now() + 120_000 }), [id], 'old: removed');
  t.notOk(exists(id));
});

t.test('a stale parent that still holds a task is left, and swept once the task is gone', { skip }, async (t) => {
  const id = newId('busy');
  removeAtEnd(t, id);
  const layout = layoutOf(id);
  for (const dir of new Set(Object.values(layout.dirs))) mkdirSync(dir, { recursive: true });
  const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => sleeper.kill('SIGKILL'));
  writeFileSync(path.join(layout.dirs.pids, 'cgroup.procs'), String(sleeper.pid));
  const later = Date.now() + 120_000;
  t.same(sweepStaleParents({ ids: [id], now: later }), [], 'a task inside: rmdir refused, left');
  t.ok(existsSync(layout.dirs.pids), 'the busy hierarchy is still there');
  const exited = new Promise((resolve) => sleeper.on('exit', resolve));
  sleeper.kill('SIGKILL');
  await exited;
  t.same(sweptOnceLetGo(id, later), [id], 'swept once empty');
  t.notOk(exists(id));
});

/** A process that prepares `id`, puts a `sleep` into the parent, cleans up and exits; resolves with the sleep's pid and cleanup's answer. */
async function preparedBusyThenExited(id: string): Promise<{ sleeper: number; left: string[] }> {
  const script = `import(${JSON.stringify(prepareModule)}).then(async (m) => {
    const { spawn } = await import('node:child_process');
    const { writeFileSync } = await import('node:fs');
    const p = m.prepareAttribution({ sessionId: ${JSON.stringify(id)} });
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore', detached: true });
    writeFileSync(p.layout.dirs.pids + '/cgroup.procs', String(sleeper.pid));
    sleeper.unref();
    const left = p.cleanup();
    console.log(JSON.stringify({ sleeper: sleeper.pid, left }));
  })`;
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
  if (out.status !== 0) throw new Error(`the preparing process failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop()!);
}

t.test('a parent its cleanup could not remove keeps its owner record and is swept once that owner has exited', { skip }, async (t) => {
  const id = newId('leftbusy');
  removeAtEnd(t, id);
  const { sleeper, left } = await preparedBusyThenExited(id);
  t.teardown(() => {
    try {
      process.kill(sleeper, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  t.ok(left.length > 0, `the cleanup could not remove the busy parent (${left.length} directories left)`);
  t.ok(existsSync(path.join(ownerDir(), id)), 'and kept its owner record, which now names a process that has exited');
  t.same(sweepStaleParents({ ids: [id] }), [], 'a sweep while the task is still inside leaves it');
  t.equal(await untilParentEmpty(layoutOf(id), 300), false, 'untilParentEmpty gives up when its time is out and a task is still inside');
  const waiting = untilParentEmpty(layoutOf(id), 10_000);
  process.kill(sleeper, 'SIGKILL');
  t.equal(await waiting, true, 'untilParentEmpty resolves once the task has left');
  // No grace period: the record says the owner is gone. (A record-less parent could wait on the
  // grace period for good: its memory directory's mtime moves on.)
  t.same(sweptOnceLetGo(id), [id], 'the next sweep removes the parent');
  t.notOk(exists(id), 'from every hierarchy');
  t.notOk(existsSync(path.join(ownerDir(), id)), 'and its owner record');
});

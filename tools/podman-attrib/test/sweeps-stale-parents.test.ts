// A session whose owner died without cleaning up (SIGKILL) leaves its parent cgroup; the next
// session's cleanup removes it, and never a parent whose owner lives, one still holding a
// task, or a record-less one younger than the grace period. Real cgroups on this host.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { cgroupManager } from '@agent-sandbox/shared';
import { cgroupLayout, parentPath, removeParent } from '../dist/cgroup-tree.js';
import { prepareAttribution } from '../dist/prepare.js';
import { ownerDir, sweepStaleParents } from '../dist/stale-parents.js';

const prepareModule = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'prepare.js');
const isRoot = process.getuid?.() === 0;
// With systemd the parent is a slice systemd makes only once a container starts in it (and
// stops with systemctl); this file proves the sweep of cgroupfs parents, made by prepare itself.
const skip = !isRoot ? 'needs root (cgroupfs parents under /sys/fs/cgroup)' : cgroupManager() === 'systemd' ? 'systemd host: session parents are slices, not made by prepare' : false;
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
  const child = spawn(process.execPath, ['-e', `import(${JSON.stringify(prepareModule)}).then((m) => { m.prepareAttribution({ sessionId: ${JSON.stringify(id)} }); console.log('ready'); setInterval(() => {}, 1000); })`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
    child.on('exit', (code) => reject(new Error(`the preparing process exited early (${code})`)));
  });
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

t.test('a killed owner\'s parent is swept by the next cleanup; a live session\'s is not', { skip }, async (t) => {
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
  t.notOk(exists(dead), 'the dead owner\'s parent is gone from every hierarchy');
  t.notOk(existsSync(path.join(ownerDir(), dead)), 'and its owner record');
  t.ok(exists(live), 'the live session\'s parent stays');
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
  // The kernel lets go of the exited task's cgroup asynchronously; allow it a moment.
  let swept: string[] = [];
  for (let i = 0; i < 20 && !swept.includes(id); i++) {
    swept = sweepStaleParents({ ids: [id], now: later });
    if (!swept.includes(id)) spawnSync('sleep', ['0.1']);
  }
  t.same(swept, [id], 'swept once empty');
  t.notOk(exists(id));
});

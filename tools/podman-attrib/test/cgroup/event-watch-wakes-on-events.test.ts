// What the launcher watches while a session runs wakes on what the kernel reports, not on a
// clock: the plan per host (v2: inotify with a slow backstop; v1 with the kernel log open: no look
// while the session runs, the kernel names a rejected fork; otherwise a look a second), and the
// inotify tree itself on a real directory tree, where the kernel's events are the same calls:
// a directory made below the parent (the container's cgroup appearing) is watched in turn, and a
// pids.events written there is seen within milliseconds, with no poll at all. A parent that does
// not exist yet (a systemd slice made with the container's scope) is waited for from above.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { sleep, tempDir } from '@agent-sandbox/testkit';
import { descendantPidsKey, eventWatchPlan, watchDescendantEvents } from '../../dist/cgroup/event-watch.js';
import { kernelKeepsPeaks, samplerIntervalMs } from '../../dist/cgroup/sampler.js';
import type { CgroupLayout } from '../../dist/cgroup/cgroup-tree.js';

t.test('the plan: events where the kernel sends them, the kernel log on v1, a slow look otherwise', async (t) => {
  t.same(eventWatchPlan('v2', true), { inotify: true, pollMs: 2000 });
  t.same(eventWatchPlan('v2', false), { inotify: true, pollMs: 2000 });
  t.same(eventWatchPlan('v1', true), { inotify: false, pollMs: null }, 'v1 as root: the kernel log names the rejected fork');
  t.same(eventWatchPlan('v1', false), { inotify: false, pollMs: 1000 });
});

t.test('the sampler samples slowly where the kernel keeps the peaks (6.1 and later)', async (t) => {
  t.equal(kernelKeepsPeaks('6.1.0-28-amd64'), true);
  t.equal(kernelKeepsPeaks('6.18.44-fc'), true);
  t.equal(kernelKeepsPeaks('5.19.0'), false);
  t.equal(kernelKeepsPeaks('7.0.1'), true);
  t.equal(samplerIntervalMs('6.1.0'), 5000);
  t.equal(samplerIntervalMs('5.10.0'), 200);
});

function layoutAt(dir: string): CgroupLayout {
  return { mode: 'v2', dirs: { memory: dir, pids: dir, cpu: dir, cpuacct: dir } } as unknown as CgroupLayout;
}

/**
 * Writes "max N" then "max 0" into a pids.events: stop()'s own last look then reads 0, so a
 * figure of N can only come from the event the first write raised.
 */
async function raiseThenClear(file: string, n: number): Promise<void> {
  writeFileSync(file, `max ${n}\n`);
  await sleep(200);
  writeFileSync(file, 'max 0\n');
  await sleep(50);
}

t.test('inotify: a child made later, then its pids.events written, is seen with no poll', async (t) => {
  const top = path.join(await tempDir(t, 'event-watch-'), 'parent');
  mkdirSync(top);
  const watch = watchDescendantEvents(layoutAt(top), { inotify: true, pollMs: null });
  const scope = path.join(top, 'libpod-abc.scope');
  mkdirSync(scope);
  await sleep(50); // the new directory's watch is added from its event
  const leaf = path.join(scope, 'container');
  mkdirSync(leaf);
  await sleep(50);
  await raiseThenClear(path.join(leaf, 'pids.events'), 3);
  t.equal(watch.stop()[descendantPidsKey], 3, 'the event was seen two levels below the parent');
});

t.test('inotify: a parent made after the watch began is waited for from its own parent', async (t) => {
  const top = path.join(await tempDir(t, 'event-watch-'), 'agent_sandbox-x.slice');
  const watch = watchDescendantEvents(layoutAt(top), { inotify: true, pollMs: null });
  mkdirSync(top);
  await sleep(50);
  mkdirSync(path.join(top, 'libpod-1.scope'));
  await sleep(50);
  await raiseThenClear(path.join(top, 'libpod-1.scope', 'pids.events'), 7);
  t.equal(watch.stop()[descendantPidsKey], 7);
});

t.test('control: without inotify and without a poll, the same writes are not seen', async (t) => {
  const top = path.join(await tempDir(t, 'event-watch-'), 'parent');
  mkdirSync(path.join(top, 'libpod-abc.scope'), { recursive: true });
  const watch = watchDescendantEvents(layoutAt(top), { inotify: false, pollMs: null });
  await raiseThenClear(path.join(top, 'libpod-abc.scope', 'pids.events'), 3);
  t.equal(watch.stop()[descendantPidsKey], undefined, 'only the last look, which reads 0');
});

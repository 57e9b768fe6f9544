// A process that has exited but is not reaped yet (a zombie: conmon and podman's clean-up
// process are orphans, reaped by PID 1, which on some hosts does so seconds later) does not
// hold the wait for the session's parent: untilParentEmpty ends once no process is a member
// (cgroup.procs; v2: cgroup.events "populated"), and the parent is then removed, from every
// hierarchy, with the zombie still charged to pids.current. Real cgroups on this host: the v1
// hierarchies, and a v2 one (the host's own, or the unified mount beside v1).
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { cgroupManager, cgroupMode } from '@agent-sandbox/shared';
import { cgroupLayout, cgroupRoot, parentPath, removeParent, type CgroupLayout } from '../../dist/cgroup/cgroup-tree.js';
import { parentHasTasks, untilParentEmpty } from '../../dist/cgroup/parent-empty.js';

const isRoot = process.getuid?.() === 0;
const skip = !isRoot
  ? 'needs root (cgroups under /sys/fs/cgroup)'
  : cgroupManager() === 'systemd'
    ? 'systemd host: session parents are slices'
    : false;
const newId = (label: string) => `astest-zombie-${label}-${randomBytes(3).toString('hex')}`;
const unifiedRoot = path.join(cgroupRoot, 'unified');
const v2Root = cgroupMode(cgroupRoot) === 'v2' ? cgroupRoot : existsSync(path.join(unifiedRoot, 'cgroup.procs')) ? unifiedRoot : undefined;

/**
 * A `sleep` moved into `dirs` and killed there, whose own parent (outside them: a `sleep` the
 * shell exec'd into) never reaps it, so it stays a zombie until the keeper is killed.
 */
async function zombieIn(t: { teardown(fn: () => unknown): void }, dirs: string[]): Promise<number> {
  const keeper: ChildProcess = spawn('/bin/sh', ['-c', 'sleep 600 & echo $!; exec sleep 600'], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.teardown(() => keeper.kill('SIGKILL'));
  const pid = await new Promise<number>((resolve, reject) => {
    let out = '';
    keeper.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    keeper.on('exit', (code) => reject(new Error(`the keeper exited early (${code})`)));
  });
  for (const dir of dirs) writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 100 && stateOf(pid) !== 'Z'; i++) await delay(50);
  return pid;
}

function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

function makeParent(t: { teardown(fn: () => unknown): void }, layout: CgroupLayout): string[] {
  const dirs = [...new Set(Object.values(layout.dirs))];
  t.teardown(() => {
    removeParent(layout, 3000);
  });
  // A child as podman makes (conmon's): the wait looks below the parent too.
  for (const dir of dirs) mkdirSync(path.join(dir, 'conmon'), { recursive: true });
  return dirs.map((dir) => path.join(dir, 'conmon'));
}

t.test(
  'v1: a zombie in the parent does not hold the wait, and the parent is removed with it still charged',
  { skip: skip || (cgroupMode(cgroupRoot) === 'v2' && 'a v2 host') },
  async (t) => {
    const layout = cgroupLayout(parentPath(newId('v1')));
    const pid = await zombieIn(t, makeParent(t, layout));
    t.equal(stateOf(pid), 'Z', 'the killed process is a zombie, not reaped');
    t.ok(Number(readFileSync(path.join(layout.dirs.pids, 'pids.current'), 'utf8')) >= 1, 'pids.current still counts it');
    t.equal(readFileSync(path.join(layout.dirs.pids, 'conmon', 'cgroup.procs'), 'utf8').trim(), '', 'cgroup.procs no longer lists it');
    t.equal(parentHasTasks(layout), false, 'the parent has no process in it');
    t.equal(await untilParentEmpty(layout, 5000), true, 'untilParentEmpty says the parent emptied');
    t.same(removeParent(layout, 0), [], 'rmdir removes it at the first try, from every hierarchy');
    t.notOk(
      layout.all.some((dir) => existsSync(dir)),
      'nothing of the parent is left',
    );
    t.equal(stateOf(pid), 'Z', 'while the zombie is still there');
  },
);

t.test(
  'v2: a zombie leaves populated at 0, and the parent is removed',
  { skip: skip || (!v2Root && 'no cgroup v2 hierarchy mounted') },
  async (t) => {
    const layout = cgroupLayout(parentPath(newId('v2')), 'v2', v2Root);
    const pid = await zombieIn(t, makeParent(t, layout));
    t.equal(stateOf(pid), 'Z', 'the killed process is a zombie, not reaped');
    t.match(readFileSync(path.join(layout.dirs.pids, 'cgroup.events'), 'utf8'), /^populated 0$/m, 'cgroup.events says populated 0');
    t.equal(await untilParentEmpty(layout, 5000), true, 'untilParentEmpty says the parent emptied');
    t.same(removeParent(layout, 0), [], 'rmdir removes it');
    t.notOk(existsSync(layout.dirs.pids), 'nothing of the parent is left');
  },
);

t.test('a live process keeps the parent busy until it exits', { skip }, async (t) => {
  const layouts = [
    ...(cgroupMode(cgroupRoot) === 'v2' ? [] : [cgroupLayout(parentPath(newId('livev1')))]),
    ...(v2Root ? [cgroupLayout(parentPath(newId('livev2')), 'v2', v2Root)] : []),
  ];
  for (const layout of layouts) {
    const inside = makeParent(t, layout);
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    t.teardown(() => sleeper.kill('SIGKILL'));
    for (const dir of inside) writeFileSync(path.join(dir, 'cgroup.procs'), String(sleeper.pid));
    t.equal(parentHasTasks(layout), true, `${layout.mode}: a live member keeps the parent busy`);
    t.equal(await untilParentEmpty(layout, 300), false, `${layout.mode}: the wait gives up when its time is out`);
    t.not(removeParent(layout, 0).length, 0, `${layout.mode}: and rmdir is refused`);
    const waiting = untilParentEmpty(layout, 10_000);
    sleeper.kill('SIGKILL');
    t.equal(await waiting, true, `${layout.mode}: the wait ends once it has exited`);
    t.same(removeParent(layout, 0), [], `${layout.mode}: and the parent is removed`);
  }
});

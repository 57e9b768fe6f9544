// The sampler's task count is the container's, in either form podman gives conmon: a `conmon`
// child (cgroupfs) or a scope of its own beside the container's (systemd). On a fake tree of
// the numbers measured in the VM tier's guest at a fork bomb's peak under --pids 64: the slice
// 65, the container's scope 64, conmon's scope 1.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { conmonTasks, sampleNow } from '../../dist/cgroup/sampler.js';
import { pidsPeak } from '../../dist/cgroup/counters.js';
import type { CgroupLayout } from '../../dist/cgroup/cgroup-tree.js';

function fakeParent(dir: string, parentTasks: number, children: Record<string, number>): CgroupLayout {
  writeFileSync(path.join(dir, 'pids.current'), `${parentTasks}\n`);
  for (const [name, tasks] of Object.entries(children)) {
    mkdirSync(path.join(dir, name));
    writeFileSync(path.join(dir, name, 'pids.current'), `${tasks}\n`);
  }
  return { mode: 'v2', dirs: { memory: dir, pids: dir, cpu: dir, cpuacct: dir }, all: [dir] };
}

t.test("systemd's form: conmon's scope beside the container's is taken out of the sample", async (t) => {
  const layout = fakeParent(await tempDir(t), 65, { 'libpod-conmon-ab12.scope': 1, 'libpod-ab12.scope': 64 });
  t.equal(conmonTasks(layout), 1, "conmon's scope holds one task");
  t.equal(sampleNow(layout).pids, 64, 'the sample is the container at its limit');
  // Control: the sample as it was (only a `conmon` child taken out) kept conmon in, and the
  // ledger's peak took the larger of the corrected peak file and that sample: 65.
  t.equal(
    pidsPeak({ 'pids.peak': 65, 'descendants/conmon-scope': 1 }, 65),
    65,
    'control: a sample with conmon in it undoes the correction',
  );
  t.equal(pidsPeak({ 'pids.peak': 65, 'descendants/conmon-scope': 1 }, sampleNow(layout).pids), 64, 'with the sample as it is now: 64');
});

t.test("cgroupfs's form: the conmon child is taken out as before", async (t) => {
  const layout = fakeParent(await tempDir(t), 14, { conmon: 13, 'libpod-ab12': 1 });
  t.equal(sampleNow(layout).pids, 1);
});

t.test('no conmon at all (it has exited): the parent is the count', async (t) => {
  const layout = fakeParent(await tempDir(t), 3, { 'libpod-ab12.scope': 3 });
  t.equal(conmonTasks(layout), 0);
  t.equal(sampleNow(layout).pids, 3);
});

// killContainerNow, the disk ceiling's stop: a real container under a test's own parent cgroup,
// its command ignoring SIGTERM and forking, is killed through its cgroup while conmon lives on,
// so podman run still reports the container's end (137) and removes it.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cgroupMode } from '@agent-sandbox/shared';
import { runPodman, spawnPodmanAttached } from '@agent-sandbox/shared/podman';
import { containerName, hardeningFlags, needs, testCgroupParent } from '@agent-sandbox/testkit';
import { cgroupLayout, killContainerNow } from '../../dist/index.js';

const busybox = 'localhost/agent-sandbox-busybox:latest';
// Rootless, a parent exists only on cgroup v2 (inside the user's delegated tree).
const req = needs({ root: cgroupMode() !== 'v2', podman: true, images: [busybox] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(ok: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const began = Date.now(); Date.now() - began < ms; await sleep(50)) if (await ok()) return true;
  return false;
}

t.test("the container's processes are killed through its cgroup; conmon is not, and podman run reports 137", req, async (t) => {
  const parent = testCgroupParent(t, 'killnow');
  const name = containerName(t, 'killnow');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'killnow-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cidfile = path.join(dir, 'cid');
  // PID 1 ignores TERM and keeps three children busy: a stop that needed its cooperation would not end it.
  const script = 'trap "" TERM; for i in 1 2 3; do (trap "" TERM; while :; do sleep 1; done) & done; touch /dev/shm/up; wait';
  const run = spawnPodmanAttached(
    ['run', '--rm', '--name', name, ...hardeningFlags, '--cgroup-parent', parent.arg, '--cidfile', cidfile, busybox, 'sh', '-c', script],
    { stdio: ['ignore', 'ignore', { file: path.join(dir, 'podman.stderr') }] },
  );
  const podmanSaid = () => {
    try {
      return readFileSync(path.join(dir, 'podman.stderr'), 'utf8').trim().split('\n').slice(-3).join(' | ');
    } catch {
      return '';
    }
  };
  const cid = () => {
    try {
      return readFileSync(cidfile, 'utf8').trim();
    } catch {
      return '';
    }
  };
  const up = await until(
    async () => cid() !== '' && (await runPodman(['exec', name, 'test', '-e', '/dev/shm/up'], { expect: 'any' })).exitCode === 0,
    60_000,
  );
  t.ok(up, `the container runs its four processes${up ? '' : ` (podman: ${podmanSaid()})`}`);
  if (!up) return;
  const layout = cgroupLayout(parent.relPath, cgroupMode());
  const began = Date.now();
  const how = killContainerNow(layout, cid());
  t.equal(how, cgroupMode() === 'v2' ? 'cgroup.kill' : 'signals', `killed by ${how}`);
  let timer: NodeJS.Timeout | undefined;
  const status = await Promise.race([run, new Promise((r) => (timer = setTimeout(r, 20_000, 'not within 20 s')))]);
  clearTimeout(timer);
  t.equal(
    status,
    137,
    `podman run reports the container killed (${Date.now() - began} ms after the kill)${status === 137 ? '' : `; podman: ${podmanSaid()}`}`,
  );
  t.equal((await runPodman(['container', 'exists', name], { expect: 'any' })).exitCode, 1, 'and removed it');
});

t.test('a container id with no cgroup under the parent: nothing is killed, undefined', req, async (t) => {
  const parent = testCgroupParent(t, 'killnone');
  t.equal(killContainerNow(cgroupLayout(parent.relPath, cgroupMode()), 'f'.repeat(64)), undefined);
});

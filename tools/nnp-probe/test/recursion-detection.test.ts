// A process inside the transient unit a handoff started does not hand off again.
// "Inside" is read from /proc/self/cgroup, which the kernel writes: the test puts the
// process in a real cgroup named like the unit (name=systemd hierarchy, where a
// systemd unit's cgroup appears), because no user manager runs here to make one.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { binPath, tempDir, type Teardown } from '@agent-sandbox/testkit';
import { findHandoffUnit, newUnitName } from '../dist/index.js';

const hierarchy = '/sys/fs/cgroup/systemd';
const bin = binPath('nnp-probe');

/** A real cgroup .../astest-nnp-<hex>/<unit>, removed at teardown (its processes moved out first). */
async function handoffCgroup(t: Teardown): Promise<{ dir: string; unit: string }> {
  const parent = `${hierarchy}/astest-nnp-${randomBytes(4).toString('hex')}`;
  const unit = newUnitName();
  const dir = `${parent}/${unit}`;
  await mkdir(dir, { recursive: true });
  t.teardown(async () => {
    const left = (await readFile(`${dir}/cgroup.procs`, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    for (const pid of left) await writeFile(`${hierarchy}/cgroup.procs`, pid).catch(() => undefined);
    await rmdir(dir).catch(() => undefined);
    await rmdir(parent);
  });
  return { dir, unit };
}

/** Runs `args` in a shell that first moves itself into `cgroupDir`. */
function inCgroup(cgroupDir: string, args: string[], env: Record<string, string | undefined> = process.env) {
  return execa('sh', ['-c', `echo $$ > "$0/cgroup.procs" && exec "$@"`, cgroupDir, ...args], {
    reject: false,
    env,
    extendEnv: false,
    stdin: 'ignore',
    timeout: 60_000,
  });
}

t.test('inside a handoff unit the probe names the unit and does not ask for a re-exec, though NoNewPrivs is 1', async (t) => {
  const { dir, unit } = await handoffCgroup(t);
  const r = await inCgroup(dir, ['setpriv', '--no-new-privs', bin]);
  t.equal(r.exitCode, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  t.equal(doc.noNewPrivs, true);
  t.equal(doc.insideHandoff, unit);
  t.equal(doc.reexec, false);
  t.same(doc.argv, []);
});

t.test('inside a handoff unit with NoNewPrivs still 1, exec refuses (90) instead of nesting another handoff', async (t) => {
  const { dir, unit } = await handoffCgroup(t);
  const marker = `${await tempDir(t)}/ran`;
  const r = await inCgroup(dir, ['setpriv', '--no-new-privs', bin, 'exec', '--', 'touch', marker]);
  t.equal(r.exitCode, 90, r.stderr);
  const doc = JSON.parse(r.stdout);
  t.equal(doc.error.code, 'handoff-recursion');
  t.equal(doc.error.unit, unit);
  await t.rejects(readFile(marker), { code: 'ENOENT' }, 'the command did not run');
});

t.test('inside a handoff unit with NoNewPrivs 0 (the normal case after a handoff), exec runs the command directly', async (t) => {
  const { dir } = await handoffCgroup(t);
  const r = await inCgroup(dir, [bin, 'exec', '--', 'sh', '-c', 'cat /proc/self/cgroup; exit 7']);
  t.equal(r.exitCode, 7, r.stderr);
  t.match(r.stdout, dir.slice(hierarchy.length), 'the command ran inside the unit cgroup');
});

t.test('no environment variable makes a process count as inside a handoff unit', async (t) => {
  const unit = newUnitName();
  const env = {
    ...process.env,
    AGENT_SANDBOX_NNP_UNIT: unit,
    NNP_PROBE_INSIDE: '1',
    INVOCATION_ID: 'f'.repeat(32),
    SYSTEMD_UNIT: unit,
  };
  const r = await execa('setpriv', ['--no-new-privs', bin], { env, extendEnv: false, reject: false, stdin: 'ignore' });
  const doc = JSON.parse(r.stdout);
  t.equal(doc.insideHandoff, null);
  t.equal(doc.reexec, true);
});

t.test('only a cgroup path component named exactly like a handoff unit counts', async (t) => {
  const good = 'agent-sandbox-nnp-0123456789abcdef.service';
  const rows: [string, string | null][] = [
    [`0::/user.slice/user-1000.slice/user@1000.service/app.slice/${good}\n`, good],
    [`9:name=systemd:/user.slice/user-1000.slice/user@1000.service/app.slice/${good}\n0::/\n`, good],
    [`0::/user.slice/${good}/podman-pause.scope\n`, good],
    ['0::/user.slice/agent-sandbox-nnp-0123456789abcdef.scope\n', null],
    ['0::/user.slice/agent-sandbox-nnp-evil.service\n', null],
    ['0::/user.slice/xagent-sandbox-nnp-0123456789abcdef.service\n', null],
    ['0::/\n', null],
  ];
  let ran = 0;
  for (const [text, want] of rows) {
    t.equal(findHandoffUnit(text), want, text.trim());
    ran += 1;
  }
  t.equal(ran, rows.length);
});

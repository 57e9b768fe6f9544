// vm/suite.mjs counts the real tap runner's TAP per user and fails the tier on any failure, on a
// listed file that did not run, on a cut-short stream and when nothing passed: a VM run can
// never look green by producing nothing.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';

const suite = path.join(repoRoot, 'vm', 'suite.mjs');
const tap = path.join(repoRoot, 'node_modules', '.bin', 'tap');

/** The real tap runner's TAP for the fixture files, as the guest writes it. */
async function runTap(files: string[]): Promise<{ tap: string; status: number }> {
  const out = await execa(tap, ['--reporter=tap', '--no-color', '--disable-coverage', '--allow-incomplete-coverage', ...files], {
    cwd: repoRoot,
    reject: false,
    env: { ...process.env, TAP: '0' },
  });
  return { tap: String(out.stdout), status: out.exitCode ?? 1 };
}

async function totals(t: Parameters<typeof tempDir>[0], root: { tap?: string; status?: number; list: string[]; leak?: number | null }) {
  const dir = await tempDir(t, 'astest-vm-totals-');
  await mkdir(`${dir}/out`);
  await mkdir(`${dir}/suite`);
  await writeFile(`${dir}/suite/root.list`, root.list.map((f) => `${f}\n`).join(''));
  await writeFile(`${dir}/suite/user.list`, '');
  if (root.tap !== undefined) await writeFile(`${dir}/out/root.tap`, root.tap);
  if (root.status !== undefined) await writeFile(`${dir}/out/root.status`, `${root.status}\n`);
  // The leak check after the suite: clean (0) unless a test says otherwise; null: it never ran.
  if (root.leak !== null) await writeFile(`${dir}/out/leak-root.status`, `${root.leak ?? 0}\n`);
  return execa('node', [suite, 'totals', `${dir}/out`, `${dir}/suite`], { reject: false });
}

// Repo-relative, as the guest runs its lists from the checkout's root.
const pass = 'test/vm/fixtures/passes.fixture.mjs';
const fail = 'test/vm/fixtures/fails.fixture.mjs';

t.test("a passing file: its leaves are counted (a subtest's own point is not), the skip as a skip, exit 0", async (t) => {
  const run = await runTap([pass]);
  const out = await totals(t, { ...run, list: [pass] });
  t.equal(out.exitCode, 0, out.stdout + out.stderr);
  t.match(out.stdout, /root: 1\/1 test files \(1 passed, 0 failed, 0 skipped\); assertions: 2 pass, 0 fail, 1 skip, 0 todo; tap exit 0/);
});

t.test('every skip is printed with its reason; one the guest has what it needs for fails the tier', async (t) => {
  const ok = await totals(t, { ...(await runTap([pass])), list: [pass] });
  t.match(ok.stdout, /root: skips \(vm-root\): 1 skipped, 0 unexpected/);
  t.match(
    ok.stdout,
    /a skipped subtest # SKIP needs a non-root user \(a fixture: root in the guest lacks one\) -- ok: this machine lacks a non-root user/,
  );
  const image = 'test/vm/fixtures/skips-an-image.fixture.mjs';
  const out = await totals(t, { ...(await runTap([image])), list: [image] });
  t.equal(out.exitCode, 1, 'nothing failed, yet the tier fails');
  t.match(out.stdout, /a containment claim # SKIP needs the image localhost\/astest-absent:latest .* -- UNEXPECTED/);
  t.match(out.stdout, /FAILED \(1 skip\(s\) the guest has what they need for\)/);
});

t.test('a failing assertion fails the tier and is counted', async (t) => {
  const run = await runTap([pass, fail]);
  const out = await totals(t, { ...run, list: [pass, fail] });
  t.equal(out.exitCode, 1);
  t.match(out.stdout, /2\/2 test files \(1 passed, 1 failed, 0 skipped\); assertions: 3 pass, 1 fail/);
  t.match(out.stdout, /FAILED \(failures; tap exited 1\)/);
});

t.test('a listed file that never ran fails the tier, even when what ran passed', async (t) => {
  const run = await runTap([pass]);
  const out = await totals(t, { ...run, list: [pass, 'test/vm/fixtures/missing.fixture.mjs'] });
  t.equal(out.exitCode, 1);
  t.match(out.stdout, /did not run: test\/vm\/fixtures\/missing\.fixture\.mjs/);
});

t.test('no TAP, an empty one, or one with no passing assertion fails the tier', async (t) => {
  const missing = await totals(t, { list: [pass] });
  t.equal(missing.exitCode, 1);
  t.match(missing.stdout, /no TAP came back/);
  const empty = await totals(t, { tap: '', status: 0, list: [pass] });
  t.equal(empty.exitCode, 1);
  t.match(empty.stdout, /no assertion passed/);
});

t.test('leftovers after the suite fail the tier, and so does a leak check that never ran', async (t) => {
  const run = await runTap([pass]);
  const leaked = await totals(t, { ...run, list: [pass], leak: 1 });
  t.equal(leaked.exitCode, 1);
  t.match(leaked.stdout, /FAILED \(the leak check found leftovers/);
  const unchecked = await totals(t, { ...run, list: [pass], leak: null });
  t.equal(unchecked.exitCode, 1);
  t.match(unchecked.stdout, /FAILED \(the leak check did not run\)/);
});

t.test(
  'a listed file that skips every test as this user fails the tier, though each skip is accepted: it proves nothing here',
  async (t) => {
    const all = 'test/vm/fixtures/skips-everything.fixture.mjs';
    const out = await totals(t, { ...(await runTap([pass, all])), list: [pass, all] });
    t.equal(out.exitCode, 1, 'nothing failed, every skip is accepted, yet the tier fails');
    t.match(out.stdout, /root: skips \(vm-root\): 3 skipped, 0 unexpected/, 'the skips themselves are accepted');
    t.match(
      out.stdout,
      /every test skipped as root \(list it for the other user only in suite\.txt\): test\/vm\/fixtures\/skips-everything\.fixture\.mjs/,
    );
    const control = await totals(t, { ...(await runTap([pass])), list: [pass] });
    t.equal(control.exitCode, 0, 'control: the passing file alone, with its one skip, passes');
  },
);

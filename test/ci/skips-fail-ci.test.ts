// scripts/skips.mjs, which CI runs on `pnpm test`'s log (and vm/suite.mjs on the guest's TAP):
// every skipped test is printed with its reason, and a skip for something the tier's machine
// has (an image a CI machine builds, root on a root host) fails, so a containment claim cannot
// pass CI by not running. The TAP is the real tap runner's, from fixture files.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';

const skips = path.join(repoRoot, 'scripts', 'skips.mjs');
const tap = path.join(repoRoot, 'node_modules', '.bin', 'tap');
const gaps = 'test/ci/fixtures/machine-gaps.fixture.mjs';
const missingImage = 'test/ci/fixtures/missing-image.fixture.mjs';

/** `pnpm test`'s log as CI keeps it: build and lint output, then the tap runner's TAP. */
async function ciLog(t: Parameters<typeof tempDir>[0], files: string[]): Promise<string> {
  const out = await execa(tap, ['--reporter=tap', '--no-color', '--disable-coverage', '--allow-incomplete-coverage', ...files], {
    cwd: repoRoot,
    reject: false,
    env: { ...process.env, TAP: '0' },
  });
  const log = path.join(await tempDir(t, 'astest-skips-'), 'ci.log');
  await writeFile(log, `> agent-sandbox-monorepo@ build\nok: not TAP, the build's own output\n${String(out.stdout)}\n`);
  return log;
}

const judge = (tier: string, log: string) => execa('node', [skips, tier, log], { reject: false });

t.test('skips for what the machine lacks are printed with their reasons, and pass', async (t) => {
  const out = await judge('host', await ciLog(t, [gaps]));
  t.equal(out.exitCode, 0, out.stdout + out.stderr);
  t.match(out.stdout, /^skips \(host\): 2 skipped, 0 unexpected$/m);
  t.match(
    out.stdout,
    `${gaps}: a claim about cgroup v2 # SKIP needs cgroup v2 (this host is cgroup v1) -- ok: this machine lacks cgroup v2`,
    'a skipped subtest, with its reason',
  );
  t.match(
    out.stdout,
    `${gaps}: a subtest > an assertion only a rootless user makes # SKIP needs a non-root user`,
    'a skipped assertion inside a subtest',
  );
});

t.test('the same skip fails on a tier that has what it needs', async (t) => {
  const out = await judge('vm-user', await ciLog(t, [gaps]));
  t.equal(out.exitCode, 1, 'uid 1000 in the guest is a non-root user on cgroup v2');
  t.match(out.stdout, /^skips \(vm-user\): 2 skipped, 2 unexpected$/m);
  t.match(out.stdout, /a claim about cgroup v2 # SKIP .* -- UNEXPECTED/);
});

t.test('a claim skipped for a missing image fails CI, even beside a need the machine does lack', async (t) => {
  const out = await judge('vm-user', await ciLog(t, [gaps, missingImage]));
  t.equal(out.exitCode, 1);
  t.match(
    out.stdout,
    `${missingImage}: a containment claim # SKIP needs root, the image localhost/astest-absent:latest (bash image/build-all.sh) -- UNEXPECTED`,
  );
});

t.test('a log with no TAP in it fails: the suite did not run', async (t) => {
  const log = path.join(await tempDir(t, 'astest-skips-'), 'ci.log');
  await writeFile(log, 'ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL build failed\n');
  const out = await judge('host', log);
  t.equal(out.exitCode, 1);
  t.match(out.stderr, /holds no TAP/);
});

t.test('an unknown tier is refused', async (t) => {
  const out = await judge('laptop', await ciLog(t, [gaps]));
  t.equal(out.exitCode, 1);
  t.match(out.stderr, /tier must be one of host, vm-root, vm-user/);
});

// The sentinel's cleanup starts from its bundle while the bundle is fresh (its node start lies
// between the launcher's death and the container's removal), and from the ES module otherwise,
// so a package rebuilt with `tsc -b` alone never runs stale bundled code.
import t from 'tap';
import { existsSync, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { sentinelEntry } from '../../src/recovery/sentinel.js';

const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist');
const bundle = path.join(dist, 'sentinel-main.bundle.cjs');

t.test('the build leaves a fresh bundle, and the sentinel runs it', async (t) => {
  t.ok(existsSync(bundle), 'pnpm run build bundled sentinel-main');
  t.equal(sentinelEntry(dist), bundle);
  // Run by hand with no lock on fd 3 it must do nothing, and exit 0: the bundle is a whole program.
  const out = await execa(process.execPath, [bundle, '/nonexistent/sessions/x.json', '/nonexistent'], { reject: false });
  t.equal(out.exitCode, 0, `exit 0 (stderr: ${out.stderr})`);
  t.equal(out.stdout + out.stderr, '', 'says nothing');
});

t.test('a bundle older than a build record it was made from is passed over', async (t) => {
  const { inputs } = JSON.parse(readFileSync(path.join(dist, 'sentinel-main.bundle.json'), 'utf8')) as { inputs: string[] };
  t.ok(inputs.length > 0, 'the manifest lists the build records');
  const built = statSync(bundle);
  t.teardown(() => utimesSync(bundle, built.atime, built.mtime));
  const older = new Date(statSync(path.join(dist, inputs[0]!)).mtimeMs - 60_000);
  utimesSync(bundle, older, older);
  t.equal(sentinelEntry(dist), path.join(dist, 'sentinel-main.js'));
});

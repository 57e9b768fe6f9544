// The image starts cred-stage from a V8 startup snapshot of its bundle (image/run-snapshot.sh,
// made at image build by the image's node 18). The same wiring, proved here with the host's
// node: the bundle builds into a snapshot without a warning, and started from it (its path where
// a script's path would be) it installs exactly as the bundle run as a script does.
import t from 'tap';
import { execa } from 'execa';
import { copyFile, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';
import { writeCredential } from './fixtures/credentials.js';

const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };

t.test('started from a snapshot of itself, the bundle installs as the script does', async (t) => {
  const base = await tempDir(t, 'cred-stage-snapshot-');
  // .cjs: the repository's package.json says "module"; the image has none above the bundle.
  const bundle = path.join(base, 'cred-stage.cjs');
  await copyFile(path.join(repoRoot, 'image/build/bin/cred-stage'), bundle);
  const blob = path.join(base, 'cred-stage.blob');
  const built = await execa(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', bundle], {
    cwd: base,
    reject: false,
    env,
    extendEnv: false,
  });
  t.equal(built.exitCode, 0, built.stderr);
  t.equal(built.stderr, '', 'no warning while the snapshot is made');

  const results = [];
  for (const how of ['script', 'snapshot']) {
    const secrets = path.join(base, how, 'secrets');
    const home = path.join(base, how, 'home');
    await mkdir(home, { recursive: true });
    await writeCredential(`${secrets}/codex/auth.json`, { auth_mode: 'apikey', OPENAI_API_KEY: 'not-a-secret' }, 0o400);
    const args = ['install', '--secrets-dir', secrets, '--home', home];
    const argv = how === 'script' ? [bundle, ...args] : ['--no-warnings', '--snapshot-blob', blob, '--', bundle, ...args];
    const r = await execa(process.execPath, argv, { reject: false, env, extendEnv: false, input: '' });
    t.equal(r.exitCode, 0, `${how}: ${r.stderr}`);
    t.equal((await stat(`${home}/.codex/auth.json`)).mode & 0o777, 0o600, `${how}: installed 0600`);
    results.push(JSON.parse(String(r.stdout).replaceAll(path.join(base, how), '<base>')));
  }
  t.same(results[1], results[0], 'the same document from the snapshot as from the script');
});

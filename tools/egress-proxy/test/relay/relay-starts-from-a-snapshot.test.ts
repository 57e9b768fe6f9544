// The image starts egress-relay from a V8 startup snapshot of its bundle (image/run-snapshot.sh).
// Node cannot snapshot `net` and `child_process`, so the relay loads them on first use: the
// bundle builds into a snapshot without a warning, and started from it (with --no-warnings, as
// the image starts it) it listens, runs its command and exits with its status, saying nothing.
import t from 'tap';
import { execa } from 'execa';
import { copyFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';

const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };

t.test('started from a snapshot of itself, the relay runs its command and passes its status', async (t) => {
  const base = await tempDir(t, 'astest-relay-snapshot-');
  const bundle = path.join(base, 'egress-relay.cjs');
  await copyFile(path.join(repoRoot, 'image/build/bin/egress-relay'), bundle);
  const blob = path.join(base, 'egress-relay.blob');
  const built = await execa(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', bundle], {
    cwd: base,
    reject: false,
    env,
    extendEnv: false,
  });
  t.equal(built.exitCode, 0, built.stderr);
  t.equal(built.stderr, '', 'no warning while the snapshot is made: net and child_process are not loaded yet');
  const run = await execa(
    process.execPath,
    [
      '--no-warnings',
      '--snapshot-blob',
      blob,
      '--',
      bundle,
      '--socket',
      path.join(base, 'none.sock'),
      '--listen',
      '127.0.0.1:0',
      '--proxy-env',
      '--',
      'sh',
      '-c',
      'echo "$HTTPS_PROXY"; exit 7',
    ],
    { reject: false, env, extendEnv: false },
  );
  t.equal(run.exitCode, 7, run.stderr);
  t.match(String(run.stdout), /^http:\/\/127\.0\.0\.1:\d+$/, 'the command got the proxy variables of a listening relay');
  t.equal(run.stderr, '', "nothing on stderr (the agent's terminal)");
});

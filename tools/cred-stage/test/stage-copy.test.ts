// `cred-stage stage` (host side): every plan refusal still applies; the copy is the checked
// bytes, 0400, owned by the container user, in 0700 dirs; a symlinked stage dir is refused.
import t from 'tap';
import { mkdir, readFile, stat, symlink } from 'node:fs/promises';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import { stageCredentials, unstageCredentials } from '../dist/index.js';
import { canary, claudeOauth, codexChatgpt, hostEnv, inSeconds, writeCredential } from './fixtures/credentials.js';

t.test('stage copies the host bytes to <stageDir>/<runtime>/<file>, 0400, uid 1000, dirs 0700', async (t) => {
  const base = await tempDir(t, 'cred-stage-stage-');
  const file = await writeCredential(`${base}/home/.claude/.credentials.json`, claudeOauth(Date.now() + 86400e3, canary()));
  const plan = await stageCredentials(
    { runtime: 'claude', home: `${base}/home`, stageDir: `${base}/stage/s1` },
    { env: hostEnv(`${base}/home`) },
  );
  const copy = `${base}/stage/s1/claude/.credentials.json`;
  t.equal(plan.staged, true);
  t.equal(plan.mounts[0]?.source, copy);
  t.same(await readFile(copy), await readFile(file));
  const info = await stat(copy);
  t.equal(info.mode & 0o777, 0o400);
  t.equal(info.uid, 1000);
  t.equal(info.gid, 1000);
  t.equal((await stat(`${base}/stage/s1`)).mode & 0o777, 0o700);
  t.equal((await stat(`${base}/stage/s1/claude`)).mode & 0o777, 0o700);
  t.equal((await stat(file)).mode & 0o777, 0o600, 'the host file keeps its mode');
  await unstageCredentials(`${base}/stage/s1`);
  await t.rejects(stat(`${base}/stage/s1`), 'unstage removes the session copy');
});

t.test('stage refuses what plan refuses, with 85, and copies nothing', async (t) => {
  const base = await tempDir(t, 'cred-stage-stage-');
  await writeCredential(`${base}/home/.codex/auth.json`, codexChatgpt(inSeconds(60), canary()));
  const out = await runBin('cred-stage', ['stage', '--runtime', 'codex', '--home', `${base}/home`, '--stage-dir', `${base}/stage/s1`], {
    env: hostEnv(`${base}/home`),
  });
  t.equal(out.exitCode, 85);
  t.equal(out.json.error.code, 'expiring');
  await t.rejects(stat(`${base}/stage`), 'no stage dir was made');
});

t.test('a stage dir that is a symlink is refused', async (t) => {
  const base = await tempDir(t, 'cred-stage-stage-');
  await writeCredential(`${base}/home/.codex/auth.json`, codexChatgpt(inSeconds(86400), canary()));
  await mkdir(`${base}/elsewhere`);
  await symlink(`${base}/elsewhere`, `${base}/stage`);
  await t.rejects(
    stageCredentials({ runtime: 'codex', home: `${base}/home`, stageDir: `${base}/stage` }, { env: hostEnv(`${base}/home`) }),
    { code: 'stage-unsafe', exitCode: 85 },
  );
});

t.test('stage without a stage dir is a usage error (80)', async (t) => {
  const out = await runBin('cred-stage', ['stage'], { input: { runtime: 'codex' } });
  t.equal(out.exitCode, 80);
  t.match(out.json.error.message, /^input\.stageDir: required field is missing/);
});

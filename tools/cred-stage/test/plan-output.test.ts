// What a successful plan says: identity and paths, a read-only mount under
// /sandbox-secrets/<runtime>/, the install step, expiry metadata, and never contents.
import t from 'tap';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { validateDocument } from '@agent-sandbox/shared';
import { CredStagePlanOutput, CredStageRuntimesOutput } from '@agent-sandbox/shared/validators/cred-stage';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import { planCredentials, credentialTable } from '../dist/index.js';
import {
  canary,
  claudeOauth,
  codexApiKey,
  codexChatgpt,
  cursorAuth,
  hostEnv,
  inSeconds,
  jwt,
  writeCredential,
} from './fixtures/credentials.js';

t.test('cred-stage runtimes prints the table as JSON, one row per runtime, valid against its schema', async (t) => {
  const out = await runBin('cred-stage', ['runtimes']);
  t.equal(out.exitCode, 0);
  t.doesNotThrow(() => validateDocument(CredStageRuntimesOutput, out.json), 'matches cred-stage.runtimes.output');
  t.same(
    out.json.runtimes.map((r: { runtime: string }) => r.runtime),
    ['codex', 'claude', 'cursor-agent'],
  );
  t.same(
    out.json.runtimes.map((r: { stagingPath: string }) => r.stagingPath),
    ['/sandbox-secrets/codex/auth.json', '/sandbox-secrets/claude/.credentials.json', '/sandbox-secrets/cursor-agent/auth.json'],
  );
  t.equal(credentialTable.length, out.json.runtimes.length, 'the library table and the printed table agree');
});

t.test('a ChatGPT-form codex file plans a read-only mount, an install step and its expiry, with no contents', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const secret = canary();
  const exp = inSeconds(86400);
  const file = await writeCredential(`${base}/.codex/auth.json`, codexChatgpt(exp, secret));
  const out = await runBin('cred-stage', ['plan'], { input: { runtime: 'codex', home: base }, env: hostEnv(base) });
  t.equal(out.exitCode, 0, out.stderr);
  t.doesNotThrow(() => validateDocument(CredStagePlanOutput, out.json), 'matches cred-stage.plan.output');
  t.same(out.json.identity, { runtime: 'codex', account: 'default', path: file });
  t.same(out.json.mounts, [{ source: file, destination: '/sandbox-secrets/codex/auth.json', readOnly: true }]);
  t.same(out.json.install, [{ from: '/sandbox-secrets/codex/auth.json', to: '/sandbox/home/.codex/auth.json', mode: '0600' }]);
  t.equal(out.json.expiresAt, new Date(exp * 1000).toISOString());
  t.equal(out.json.expiryOverride, false);
  t.equal(out.json.sessionSeconds, 7200, 'the default session length is two hours');
  t.notOk(out.stdout.includes(secret) || out.stderr.includes(secret), 'no canary in the output');
});

t.test('an API-key codex file has no expiry and is planned', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  await writeCredential(`${base}/.codex/auth.json`, codexApiKey(canary()));
  const plan = await planCredentials({ runtime: 'codex', home: base }, { env: hostEnv(base) });
  t.equal(plan.expiresAt, null);
  t.equal(plan.expiryOverride, false);
});

t.test('allowExpiring stages an expiring token and the output records that the override was used', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  await writeCredential(`${base}/.claude/.credentials.json`, claudeOauth(Date.now() + 60e3, canary()));
  const out = await runBin('cred-stage', ['plan', '--runtime', 'claude', '--home', base, '--allow-expiring'], { env: hostEnv(base) });
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(out.json.expiryOverride, true);
});

t.test('a short declared session lets a token that outlives it through', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  await writeCredential(`${base}/.codex/auth.json`, codexChatgpt(inSeconds(1800), canary()));
  const plan = await planCredentials({ runtime: 'codex', home: base, sessionSeconds: 900 }, { env: hostEnv(base) });
  t.equal(plan.expiryOverride, false);
  t.equal(plan.sessionSeconds, 900);
});

t.test('CODEX_HOME and XDG_CONFIG_HOME move the host paths, as the runtimes do', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const codex = await writeCredential(`${base}/codex-home/auth.json`, codexApiKey(canary()));
  const cursor = await writeCredential(`${base}/xdg/cursor/auth.json`, cursorAuth(canary()));
  const env = hostEnv(`${base}/home`, { CODEX_HOME: `${base}/codex-home`, XDG_CONFIG_HOME: `${base}/xdg` });
  await mkdir(`${base}/home`);
  t.equal((await planCredentials({ runtime: 'codex' }, { env })).identity.path, codex);
  t.equal((await planCredentials({ runtime: 'cursor-agent' }, { env })).identity.path, cursor);
});

t.test("cursor's ~/.cursor/cli-config.json is configuration and is never taken for its credential", async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  await writeCredential(`${base}/.cursor/cli-config.json`, { version: 1 });
  await t.rejects(planCredentials({ runtime: 'cursor-agent', home: base }, { env: hostEnv(base) }), { code: 'not-found', exitCode: 85 });
});

t.test('a cursor access-token JWT exp is the expiry when there is no expiry field; none at all means no check', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const exp = inSeconds(86400);
  await writeCredential(`${base}/.config/cursor/auth.json`, { accessToken: jwt(exp, canary()) });
  t.equal(
    (await planCredentials({ runtime: 'cursor-agent', home: base }, { env: hostEnv(base) })).expiresAt,
    new Date(exp * 1000).toISOString(),
  );
  await writeCredential(`${base}/.config/cursor/auth.json`, cursorAuth(canary()));
  t.equal((await planCredentials({ runtime: 'cursor-agent', home: base }, { env: hostEnv(base) })).expiresAt, null);
});

t.test('a symlinked credential file that resolves inside the home is accepted and mounted by its real path', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const real = await writeCredential(`${base}/dotfiles/codex-auth.json`, codexApiKey(canary()));
  await mkdir(`${base}/.codex`);
  await symlink(real, `${base}/.codex/auth.json`);
  const plan = await planCredentials({ runtime: 'codex', home: base }, { env: hostEnv(base) });
  t.equal(plan.identity.path, `${base}/.codex/auth.json`);
  t.equal(plan.mounts[0]?.source, real);
});

t.test('a named account resolves through the input map, with ~ expanded, and is carried as identity', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const file = await writeCredential(`${base}/.codex-work/auth.json`, codexApiKey(canary()));
  const plan = await planCredentials(
    { runtime: 'codex', home: base, account: 'work', accounts: { work: '~/.codex-work/auth.json' } },
    { env: hostEnv(base) },
  );
  t.same(plan.identity, { runtime: 'codex', account: 'work', path: file });
});

t.test('a named account resolves through accounts.json when the input has no map', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const file = await writeCredential(`${base}/.claude-work/.credentials.json`, claudeOauth(Date.now() + 86400e3, canary()));
  await mkdir(`${base}/.config/agent-sandbox`, { recursive: true });
  await writeFile(`${base}/.config/agent-sandbox/accounts.json`, JSON.stringify({ claude: { work: file } }));
  const out = await runBin('cred-stage', ['plan', '--runtime', 'claude', '--account', 'work', '--home', base], { env: hostEnv(base) });
  t.equal(out.exitCode, 0, out.stderr);
  t.same(out.json.identity, { runtime: 'claude', account: 'work', path: file });
});

t.test('with a stage dir the mount points at the per-session copy and the stage step names it', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const file = await writeCredential(`${base}/.codex/auth.json`, codexApiKey(canary()));
  const plan = await planCredentials({ runtime: 'codex', home: base, stageDir: `${base}/stage/s1` }, { env: hostEnv(base) });
  t.same(plan.mounts, [{ source: `${base}/stage/s1/codex/auth.json`, destination: '/sandbox-secrets/codex/auth.json', readOnly: true }]);
  t.same(plan.stage, [{ from: file, to: `${base}/stage/s1/codex/auth.json`, mode: '0400' }]);
  await t.rejects(stat(`${base}/stage`), 'plan alone creates nothing');
});

t.test('an unknown runtime is a usage error (80) naming the field and the known runtimes', async (t) => {
  const out = await runBin('cred-stage', ['plan', '--runtime', 'gemini', '--home', '/tmp']);
  t.equal(out.exitCode, 80);
  t.match(out.json.error.message, /^input\.runtime: unknown runtime "gemini"; known: codex, claude, cursor-agent/);
});

t.test('an unknown input field is refused with 80', async (t) => {
  const out = await runBin('cred-stage', ['plan'], { input: { runtime: 'codex', token: 'x' } });
  t.equal(out.exitCode, 80);
  t.equal(out.json.error.code, 'unknown-field');
});

t.test('an account name in the accounts map that is not a plain name is refused with 80', async (t) => {
  for (const name of ['../escape', '.hidden', 'a/b', '']) {
    const out = await runBin('cred-stage', ['plan'], { input: { runtime: 'codex', home: '/tmp', accounts: { [name]: '/tmp/auth.json' } } });
    t.equal(out.exitCode, 80, JSON.stringify(name));
    t.equal(out.json.error.code, 'unknown-field', JSON.stringify(name));
    t.match(out.json.error.message, /^input\.accounts\./);
  }
});

t.test('plan reads the host file but never changes it', async (t) => {
  const base = await tempDir(t, 'cred-stage-ok-');
  const file = await writeCredential(`${base}/.codex/auth.json`, codexChatgpt(inSeconds(86400), canary()));
  const before = { bytes: await readFile(file), mtime: (await stat(file)).mtimeMs, mode: (await stat(file)).mode };
  await planCredentials({ runtime: 'codex', home: base }, { env: hostEnv(base) });
  t.same(await readFile(file), before.bytes);
  t.equal((await stat(file)).mtimeMs, before.mtime);
  t.equal((await stat(file)).mode, before.mode);
});

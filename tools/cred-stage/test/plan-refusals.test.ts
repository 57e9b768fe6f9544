// Every way a host credential cannot be staged is refused with 85 and a message that
// names the file, never its contents (each file carries a canary that must not appear).
import t from 'tap';
import { mkdir, symlink } from 'node:fs/promises';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import { canary, claudeOauth, codexChatgpt, cursorAuth, hostEnv, inSeconds, writeCredential } from './fixtures/credentials.js';

interface Row {
  claim: string;
  /** Builds the files under `base` (the home is `${base}/home`); returns the input and the file to be named. */
  setup: (base: string, secret: string) => Promise<{ input: Record<string, unknown>; file: string }>;
  code: string;
}

const rows: Row[] = [
  {
    claim: 'a missing codex auth.json is refused',
    setup: async (b) => ({ input: { runtime: 'codex' }, file: `${b}/home/.codex/auth.json` }),
    code: 'not-found',
  },
  {
    claim: 'a directory where the claude credentials file should be is refused as not a regular file',
    setup: async (b) => {
      await mkdir(`${b}/home/.claude/.credentials.json`, { recursive: true, mode: 0o700 });
      return { input: { runtime: 'claude' }, file: `${b}/home/.claude/.credentials.json` };
    },
    code: 'not-regular-file',
  },
  {
    claim: 'a symlink that resolves outside the home is refused',
    setup: async (b, s) => {
      await writeCredential(`${b}/elsewhere/auth.json`, codexChatgpt(inSeconds(86400), s));
      await mkdir(`${b}/home/.codex`, { recursive: true });
      await symlink(`${b}/elsewhere/auth.json`, `${b}/home/.codex/auth.json`);
      return { input: { runtime: 'codex' }, file: `${b}/home/.codex/auth.json` };
    },
    code: 'symlink-outside-home',
  },
  {
    claim: 'a symlinked parent directory that resolves outside the home is refused',
    setup: async (b, s) => {
      await writeCredential(`${b}/elsewhere/cursor/auth.json`, cursorAuth(s));
      await mkdir(`${b}/home`, { recursive: true });
      await symlink(`${b}/elsewhere`, `${b}/home/.config`);
      return { input: { runtime: 'cursor-agent' }, file: `${b}/home/.config/cursor/auth.json` };
    },
    code: 'symlink-outside-home',
  },
  {
    claim: 'a dangling symlink is refused as missing',
    setup: async (b) => {
      await mkdir(`${b}/home/.codex`, { recursive: true });
      await symlink(`${b}/home/gone.json`, `${b}/home/.codex/auth.json`);
      return { input: { runtime: 'codex' }, file: `${b}/home/.codex/auth.json` };
    },
    code: 'not-found',
  },
  {
    claim: 'a file readable by group is refused',
    setup: async (b, s) => ({
      input: { runtime: 'codex' },
      file: await writeCredential(`${b}/home/.codex/auth.json`, codexChatgpt(inSeconds(86400), s), 0o640),
    }),
    code: 'too-permissive',
  },
  {
    claim: 'a file readable by others is refused',
    setup: async (b, s) => ({
      input: { runtime: 'claude' },
      file: await writeCredential(`${b}/home/.claude/.credentials.json`, claudeOauth(Date.now() + 86400e3, s), 0o604),
    }),
    code: 'too-permissive',
  },
  {
    claim: 'an unparsable file is refused without quoting it',
    setup: async (b, s) => ({
      input: { runtime: 'codex' },
      file: await writeCredential(`${b}/home/.codex/auth.json`, `${s}{"tokens":`),
    }),
    code: 'unparsable',
  },
  {
    claim: 'a JSON file that is not an object is refused',
    setup: async (b, s) => ({
      input: { runtime: 'cursor-agent' },
      file: await writeCredential(`${b}/home/.config/cursor/auth.json`, JSON.stringify([s])),
    }),
    code: 'unparsable',
  },
  {
    claim: 'a codex access token expiring within the default two-hour session is refused',
    setup: async (b, s) => ({
      input: { runtime: 'codex' },
      file: await writeCredential(`${b}/home/.codex/auth.json`, codexChatgpt(inSeconds(3600), s)),
    }),
    code: 'expiring',
  },
  {
    claim: 'a codex access token that has already expired is refused',
    setup: async (b, s) => ({
      input: { runtime: 'codex' },
      file: await writeCredential(`${b}/home/.codex/auth.json`, codexChatgpt(inSeconds(-60), s)),
    }),
    code: 'expiring',
  },
  {
    claim: 'a claude token expiring within a declared 8-hour session is refused',
    setup: async (b, s) => ({
      input: { runtime: 'claude', sessionSeconds: 8 * 3600 },
      file: await writeCredential(`${b}/home/.claude/.credentials.json`, claudeOauth(Date.now() + 4 * 3600e3, s)),
    }),
    code: 'expiring',
  },
  {
    claim: 'a cursor token with an expiresAt inside the session is refused',
    setup: async (b, s) => ({
      input: { runtime: 'cursor-agent' },
      file: await writeCredential(`${b}/home/.config/cursor/auth.json`, cursorAuth(s, { expiresAt: Date.now() + 600e3 })),
    }),
    code: 'expiring',
  },
  {
    claim: 'a codex ChatGPT token that is not a JWT is refused as expiry-unreadable',
    setup: async (b, s) => ({
      input: { runtime: 'codex' },
      file: await writeCredential(`${b}/home/.codex/auth.json`, { tokens: { access_token: `opaque-${s}` } }),
    }),
    code: 'expiry-unreadable',
  },
  {
    claim: 'a claude file without claudeAiOauth is refused as expiry-unreadable',
    setup: async (b, s) => ({
      input: { runtime: 'claude' },
      file: await writeCredential(`${b}/home/.claude/.credentials.json`, { mcpOAuth: { token: s } }),
    }),
    code: 'expiry-unreadable',
  },
  {
    claim: 'an account that is not in the accounts map is refused',
    setup: async (b) => ({
      input: { runtime: 'codex', account: 'work', accounts: { personal: `${b}/home/.codex-personal/auth.json` } },
      file: 'input.accounts',
    }),
    code: 'unknown-account',
  },
  {
    claim: "a named account's missing file is refused naming that file",
    setup: async (b) => ({
      input: { runtime: 'codex', account: 'work', accounts: { work: '~/.codex-work/auth.json' } },
      file: `${b}/home/.codex-work/auth.json`,
    }),
    code: 'not-found',
  },
  {
    claim: 'an unparsable accounts.json is refused naming it',
    setup: async (b, s) => {
      await writeCredential(`${b}/home/.config/agent-sandbox/accounts.json`, `{${s}`);
      return { input: { runtime: 'codex', account: 'work' }, file: `${b}/home/.config/agent-sandbox/accounts.json` };
    },
    code: 'accounts-unparsable',
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, async (t) => {
    const base = await tempDir(t, 'cred-stage-plan-');
    await mkdir(`${base}/home`, { recursive: true });
    const secret = canary();
    const { input, file } = await row.setup(base, secret);
    const out = await runBin('cred-stage', ['plan'], { input: { home: `${base}/home`, ...input }, env: hostEnv(`${base}/home`) });
    t.equal(out.exitCode, 85, `exit 85 (stderr: ${out.stderr.trim()})`);
    t.equal(out.json?.ok, false, 'a JSON error document');
    t.equal(out.json?.error.code, row.code);
    t.ok(out.json?.error.message.includes(file), `the message names ${file}: ${out.json?.error.message}`);
    t.notOk(out.stdout.includes(secret) || out.stderr.includes(secret), 'the canary appears in neither stdout nor stderr');
    t.notOk(out.stdout.includes('CANARY') || out.stderr.includes('CANARY'), 'nor does any part of it');
    ran += 1;
  });
}

t.test('the expiry refusal says to refresh on the host and why', async (t) => {
  const base = await tempDir(t, 'cred-stage-plan-');
  await writeCredential(`${base}/home/.codex/auth.json`, codexChatgpt(inSeconds(600), canary()));
  const out = await runBin('cred-stage', ['plan', '--runtime', 'codex', '--home', `${base}/home`], { env: hostEnv(`${base}/home`) });
  t.equal(out.exitCode, 85);
  t.match(out.json.error.message, /refresh it on the host first/);
  t.match(out.json.error.message, /discarded/);
  t.match(out.json.error.message, /log the host out/);
});

t.teardown(() => {
  if (ran !== rows.length) throw new Error(`ran ${ran} of ${rows.length} rows: a row was skipped silently`);
});

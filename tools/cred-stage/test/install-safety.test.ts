// The container-side install, run here through the same bundle the image carries
// (image/build/bin/cred-stage, built by `pnpm run bundle`): copies each staged file
// to $HOME/<table path> with 0600 and 0700 parents, never through a symlink, and
// fails closed (85) on anything missing or unexpected under the staging root.
import t from 'tap';
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';
import { installCredentials } from '../dist/index.js';
import { canary, writeCredential } from './fixtures/credentials.js';

const bundle = path.join(repoRoot, 'image/build/bin/cred-stage');

async function runBundle(args: string[]) {
  const r = await execa(bundle, args, {
    reject: false,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    extendEnv: false,
    input: 'STDIN-IS-NOT-READ',
  });
  let json: any;
  try {
    json = JSON.parse(String(r.stdout));
  } catch {
    json = undefined;
  }
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr), json };
}

async function layout(t: Parameters<typeof tempDir>[0]) {
  const base = await tempDir(t, 'cred-stage-install-');
  await mkdir(`${base}/secrets`);
  await mkdir(`${base}/home`);
  return { base, secrets: `${base}/secrets`, home: `${base}/home` };
}

t.test('the bundle exists and is a node script with a shebang (run `pnpm --filter @agent-sandbox/cred-stage bundle`)', async (t) => {
  t.ok(existsSync(bundle), bundle);
  t.match((await readFile(bundle, 'utf8')).slice(0, 40), /^#!\/usr\/bin\/env node\n/);
});

t.test('staged files of every runtime are installed under HOME with mode 0600 and 0700 parents', async (t) => {
  const { secrets, home } = await layout(t);
  const secret = canary();
  await writeCredential(`${secrets}/codex/auth.json`, { auth_mode: 'apikey', OPENAI_API_KEY: secret }, 0o400);
  await writeCredential(`${secrets}/claude/.credentials.json`, { claudeAiOauth: { accessToken: secret } }, 0o400);
  await writeCredential(`${secrets}/cursor-agent/auth.json`, { accessToken: secret }, 0o400);
  const out = await runBundle(['install', '--secrets-dir', secrets, '--home', home]);
  t.equal(out.exitCode, 0, out.stderr);
  t.same(
    out.json.installed.map((s: { to: string }) => s.to),
    [`${home}/.claude/.credentials.json`, `${home}/.codex/auth.json`, `${home}/.config/cursor/auth.json`],
  );
  for (const file of [`${home}/.codex/auth.json`, `${home}/.claude/.credentials.json`, `${home}/.config/cursor/auth.json`]) {
    t.equal((await stat(file)).mode & 0o777, 0o600, `${file} is 0600`);
    t.equal((await stat(file)).uid, process.getuid!(), `${file} is owned by the user that ran install`);
  }
  for (const dir of [`${home}/.codex`, `${home}/.claude`, `${home}/.config`, `${home}/.config/cursor`]) {
    t.equal((await stat(dir)).mode & 0o777, 0o700, `${dir} is 0700`);
  }
  t.equal(JSON.parse(await readFile(`${home}/.codex/auth.json`, 'utf8')).OPENAI_API_KEY, secret, 'the copy has the bytes');
  t.notOk(out.stdout.includes(secret) || out.stderr.includes(secret), 'no canary in the output');
});

t.test('install reads no stdin: the entrypoint leaves stdin to the agent', async (t) => {
  const { secrets, home } = await layout(t);
  const out = await runBundle(['install', '--secrets-dir', secrets, '--home', home]);
  t.equal(out.exitCode, 0);
  t.same(out.json, { ok: true, installed: [] });
});

interface Row {
  claim: string;
  setup: (l: { base: string; secrets: string; home: string }) => Promise<string[] | void>;
  code: string;
  /** Text the message must contain. */
  names: (l: { base: string; secrets: string; home: string }) => string;
  exitCode?: number;
}

const rows: Row[] = [
  {
    claim: 'a runtime directory without its staged file fails closed',
    setup: async ({ secrets }) => void (await mkdir(`${secrets}/codex`)),
    code: 'staged-missing',
    names: ({ secrets }) => `${secrets}/codex/auth.json`,
  },
  {
    claim: 'a required runtime that is not staged fails closed',
    setup: async () => ['--require', 'claude'],
    code: 'staged-missing',
    names: ({ secrets }) => `${secrets}/claude`,
  },
  {
    claim: 'an entry under the staging root that is no runtime fails closed',
    setup: async ({ secrets }) => void (await writeFile(`${secrets}/stray.json`, '{}')),
    code: 'unknown-staged-entry',
    names: ({ secrets }) => `${secrets}/stray.json`,
  },
  {
    claim: 'an unexpected file inside a runtime directory fails closed',
    setup: async ({ secrets }) => {
      await writeCredential(`${secrets}/codex/auth.json`, {}, 0o400);
      await writeFile(`${secrets}/codex/extra.json`, '{}');
    },
    code: 'unexpected-staged-file',
    names: ({ secrets }) => `${secrets}/codex/extra.json`,
  },
  {
    claim: 'a staged file that is a symlink is not followed',
    setup: async ({ base, secrets }) => {
      await writeCredential(`${base}/real.json`, {}, 0o400);
      await mkdir(`${secrets}/codex`);
      await symlink(`${base}/real.json`, `${secrets}/codex/auth.json`);
    },
    code: 'staged-unreadable',
    names: ({ secrets }) => `${secrets}/codex/auth.json`,
  },
  {
    claim: 'a symlink at the destination is refused and its target is left alone',
    setup: async ({ base, secrets, home }) => {
      await writeCredential(`${secrets}/codex/auth.json`, { auth_mode: 'apikey' }, 0o400);
      await writeFile(`${base}/victim`, 'untouched');
      await mkdir(`${home}/.codex`, { mode: 0o700 });
      await symlink(`${base}/victim`, `${home}/.codex/auth.json`);
    },
    code: 'destination-symlink',
    names: ({ home }) => `${home}/.codex/auth.json`,
  },
  {
    claim: 'a symlink in place of a destination parent directory is refused',
    setup: async ({ base, secrets, home }) => {
      await writeCredential(`${secrets}/cursor-agent/auth.json`, {}, 0o400);
      await mkdir(`${base}/elsewhere`);
      await symlink(`${base}/elsewhere`, `${home}/.config`);
    },
    code: 'destination-symlink',
    names: ({ home }) => `${home}/.config`,
  },
  {
    claim: 'a HOME that does not exist fails closed',
    setup: async ({ base, secrets }) => {
      await writeCredential(`${secrets}/codex/auth.json`, {}, 0o400);
      return ['--home', `${base}/no-home`];
    },
    code: 'no-home',
    names: ({ base }) => `${base}/no-home`,
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, async (t) => {
    const l = await layout(t);
    const extra = (await row.setup(l)) ?? [];
    const args = ['install', '--secrets-dir', l.secrets, ...(extra.includes('--home') ? [] : ['--home', l.home]), ...extra];
    const out = await runBundle(args);
    t.equal(out.exitCode, row.exitCode ?? 85, `exit (stderr: ${out.stderr.trim()})`);
    t.equal(out.json?.error?.code, row.code);
    t.ok(String(out.json?.error?.message).includes(row.names(l)), `message names ${row.names(l)}: ${out.json?.error?.message}`);
    if (existsSync(`${l.base}/victim`)) t.equal(await readFile(`${l.base}/victim`, 'utf8'), 'untouched', 'the link target was not written');
    if (existsSync(`${l.base}/elsewhere`)) t.notOk(existsSync(`${l.base}/elsewhere/cursor`), 'nothing was created through the link');
    ran += 1;
  });
}

t.test('an existing regular file at the destination is replaced, not appended to', async (t) => {
  const { secrets, home } = await layout(t);
  await writeCredential(`${secrets}/codex/auth.json`, { auth_mode: 'apikey', v: 2 }, 0o400);
  await writeCredential(`${home}/.codex/auth.json`, 'old-and-longer-than-the-new-one'.repeat(10), 0o644);
  const result = await installCredentials({ secretsDir: secrets, home, env: {} });
  t.equal(result.installed.length, 1);
  t.same(JSON.parse(await readFile(`${home}/.codex/auth.json`, 'utf8')), { auth_mode: 'apikey', v: 2 });
  t.equal((await stat(`${home}/.codex/auth.json`)).mode & 0o777, 0o600);
});

t.teardown(() => {
  if (ran !== rows.length) throw new Error(`ran ${ran} of ${rows.length} rows: a row was skipped silently`);
});

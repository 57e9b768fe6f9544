// A real token refresh inside the container: the real Codex CLI, given a ChatGPT-form auth.json
// whose access-token JWT has expired, refreshes it at the scripted server (its refresh URL
// pointed there) and rewrites auth.json. The rewrite lands in the container's copy only: the
// host file stays byte-identical with its mtime unchanged, and the copy is gone with the
// session. cred-stage refuses such a token by default (85); `--allow-expiring`, a flag and never
// an environment variable, overrides it, and the ledger records that it was used.
import t, { type Test } from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { agentArgs, ensureAgentsImage, realSession } from './fixtures/real-agent-session.js';

t.before(ensureAgentsImage);

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
/** An unsigned JWT carrying the claims codex reads from a ChatGPT login. */
function jwt(exp: number, extra: Record<string, unknown> = {}): string {
  const auth = { chatgpt_account_id: 'acct-astest', chatgpt_plan_type: 'pro', chatgpt_user_id: 'user-astest' };
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ exp, iat: exp - 3600, email: 'astest@sandbox.invalid', 'https://api.openai.com/auth': auth, ...extra })}.sig`;
}

const now = () => Math.floor(Date.now() / 1000);
const refreshedRefreshToken = 'refreshed-refresh-token'; // what model-server.mjs hands out

/**
 * A real codex session whose staged auth.json holds an expired ChatGPT token (the canary is its
 * refresh token); the scripted server hands out `newAccess` when codex refreshes, and expects it.
 */
function expiredTokenSession(t: Test, newAccess: string) {
  return realSession(t, {
    runtime: 'codex',
    label: 'refresh',
    // Step 0 runs after codex refreshed (the refresh precedes its first model request): the agent
    // reports whether its own auth.json now holds the refreshed token, into the workspace.
    steps: [
      {
        exec: `grep -c ${refreshedRefreshToken} "$HOME/.codex/auth.json" > refresh-evidence.txt; stat -c '%U %a %s' "$HOME/.codex/auth.json" >> refresh-evidence.txt`,
      },
      { say: 'done' },
    ],
    credential: (canary) => ({
      auth_mode: 'chatgpt',
      OPENAI_API_KEY: null,
      tokens: { id_token: jwt(now() - 60), access_token: jwt(now() - 60, { canary }), refresh_token: canary, account_id: 'acct-astest' },
      last_refresh: new Date(Date.now() - 86_400_000).toISOString(),
    }),
    // After the refresh, the agent must present the refreshed access token, not the expired one.
    expectedToken: () => newAccess,
    refreshAccessToken: newAccess,
    codexConfigExtra: 'chatgpt_base_url = "http://127.0.0.1:8080/backend-api/"',
  });
}

t.test('codex refreshes an expired token inside the container; the rewrite stays in the container copy', async (t) => {
  const newAccess = jwt(now() + 7200, { note: `refreshed-${randomBytes(4).toString('hex')}` });
  const s = await expiredTokenSession(t, newAccess);
  // codex reads its refresh URL from this variable; it travels as an argument of `env` inside
  // the container (the agent's own argv), so nothing on the host or in the launcher changes.
  const refreshed = [
    '--agent-bin',
    '/usr/bin/env',
    '--',
    `CODEX_REFRESH_TOKEN_URL_OVERRIDE=${s.server.url}/oauth/token`,
    'codex',
    ...agentArgs('codex', 'report the token state'),
  ];

  // Without the override, cred-stage refuses the expired token before anything starts.
  const refused = await s.run(['run', ...s.launcherFlags, ...refreshed]);
  t.equal(refused.exitCode, 85, 'an expired token is refused (85) by default');
  t.match(refused.stderr, /token expired at .*refresh it on the host first/, 'the refusal names the cause and the remedy');
  t.equal((await s.server.requests()).length, 0, 'no agent ran: the server saw nothing');

  const out = await s.run(['run', ...s.launcherFlags, '--allow-expiring', ...refreshed]);
  t.equal(out.exitCode, 0, `the agent exited 0\n${out.stderr.slice(-3000)}`);

  const requests = await s.server.requests();
  const refresh = requests.filter((r) => r.api === 'refresh');
  t.equal(refresh.length, 1, 'codex refreshed once, at the server');
  const responses = requests.filter((r) => r.api === 'responses');
  t.same(
    responses.map((r) => r.step),
    [0, 1],
    'then ran both steps',
  );
  t.ok(
    responses.every((r) => r.tokenMatched === true),
    'presenting the refreshed access token',
  );
  t.ok(requests.indexOf(refresh[0]!) < requests.indexOf(responses[0]!), 'the refresh came before the first model request');

  const evidence = readFileSync(path.join(s.workspace, 'refresh-evidence.txt'), 'utf8').split('\n');
  t.equal(evidence[0], '1', 'inside the container, codex rewrote its auth.json with the refreshed token');
  t.match(evidence[1], /^agent 600 \d+$/, 'the rewritten copy is the agent-owned 0600 copy in the container HOME');

  t.equal(s.credential.sha256(), s.credential.sha256Before, 'the host credential file is byte-identical');
  t.equal(statSync(s.credential.path).mtimeMs, s.credential.mtimeMs, 'and its mtime is unchanged');
  t.notMatch(readFileSync(s.credential.path, 'utf8'), refreshedRefreshToken, 'the host file does not hold the refreshed token');
  t.notOk(existsSync(path.join(s.home, '.codex/auth.json')), 'the rewritten copy is removed from the session home with the session');

  const [refusedLine, ranLine] = s.ledgerLines();
  t.match(refusedLine, { outcome: 'refused', reason: 'expiring', exitCode: 85 }, 'the ledger records the refusal');
  t.notOk(refusedLine.evidence?.expiryOverride, 'without the flag no override is recorded');
  t.match(
    ranLine,
    { outcome: 'ran', exitCode: 0, evidence: { expiryOverride: true } },
    'the ledger records that the expiry override was used',
  );
  t.ok(ranLine.peak.memoryBytes > 0 && ranLine.peak.pids > 0, 'with the peaks');
  for (const text of [out.stdout, out.stderr, refused.stderr, readFileSync(s.ledger, 'utf8')]) {
    t.notOk(text.includes(s.canary), 'the canary (the staged refresh token) is in no output and not in the ledger');
  }
});

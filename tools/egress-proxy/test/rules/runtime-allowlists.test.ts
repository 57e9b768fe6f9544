// The allowlists per runtime are data, one row per runtime of the credential table, each
// entry one the broker accepts; the CLI prints them and checks a target against any list.
import t from 'tap';
import { credentialTable } from '@agent-sandbox/cred-stage';
import { validateDocument } from '@agent-sandbox/shared/json-input';
import { EgressCheckOutput, EgressRuntimesOutput } from '@agent-sandbox/shared/validators/egress-proxy';
import { runBin } from '@agent-sandbox/testkit';
import { egressAllowlist, parsePolicy, runtimeEgressTable } from '../../dist/index.js';

t.test('one row per runtime of the credential table, in the same order', async (t) => {
  t.same(
    runtimeEgressTable.map((r) => r.runtime),
    credentialTable.map((r) => r.runtime),
  );
});

t.test('the lists: codex and claude as issue 17 lists them, cursor-agent unknown (nothing allowed by default)', async (t) => {
  t.same(egressAllowlist('codex'), ['api.openai.com', 'chatgpt.com', 'auth.openai.com']);
  t.same(egressAllowlist('claude'), ['api.anthropic.com', 'claude.ai', 'platform.claude.com']);
  t.same(egressAllowlist('cursor-agent'), []);
  t.equal(runtimeEgressTable.find((r) => r.runtime === 'cursor-agent')!.allow, null);
  t.match(runtimeEgressTable.find((r) => r.runtime === 'cursor-agent')!.note, /^unknown/);
});

t.test('every entry is one the broker accepts', async (t) => {
  for (const row of runtimeEgressTable) t.doesNotThrow(() => parsePolicy(row.allow ?? []), row.runtime);
});

t.test('egress-proxy runtimes prints the table as its schema says', async (t) => {
  const out = await runBin('egress-proxy', ['runtimes']);
  t.equal(out.exitCode, 0, out.stderr);
  const doc = validateDocument(EgressRuntimesOutput, out.json, 'stdout');
  t.same(
    doc.runtimes.map((r) => r.allow),
    runtimeEgressTable.map((r) => r.allow),
  );
});

t.test('egress-proxy check answers with the name rules, and refuses a bad target with 80', async (t) => {
  const allowed = await runBin('egress-proxy', ['check'], { input: { allow: egressAllowlist('codex'), target: 'API.openai.com.' } });
  t.equal(allowed.exitCode, 0, allowed.stderr);
  t.same(validateDocument(EgressCheckOutput, allowed.json, 'stdout'), {
    ok: true,
    host: 'api.openai.com',
    port: 443,
    decision: 'allowed',
    rule: 'allowlisted',
    entry: 'api.openai.com',
  });
  const denied = await runBin('egress-proxy', ['check', '--allow', 'api.openai.com', '--target', 'api.openai.com:22']);
  t.match(denied.json, { ok: true, decision: 'denied', rule: 'bad-port' });
  const bad = await runBin('egress-proxy', ['check'], { input: { allow: [], target: '[::1' } });
  t.equal(bad.exitCode, 80);
  t.match(bad.json, { ok: false, error: { code: 'invalid-field' } });
  const unknownField = await runBin('egress-proxy', ['serve'], {
    input: { socketPath: '/tmp/x.sock', sessionId: 's', allow: [], resolver: '8.8.8.8' },
  });
  t.equal(unknownField.exitCode, 80, 'no field of the config names a resolver');
  t.match(unknownField.json, { ok: false, error: { message: /resolver/ } });
});

// Why the sessions run with the CLIs' own switches for what would reach out besides the model
// API (scripts/demo/codex-config.toml's update check, analytics, plugins and apps; the agents
// image's DISABLE_TELEMETRY, DISABLE_AUTOUPDATER, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC),
// measured through the broker with the switches taken away:
// - codex then tries github.com, api.github.com, ab.chatgpt.com (refused: not allowlisted) and
//   chatgpt.com (allowlisted, unresolvable here): the broker refuses and records them, and the
//   session still completes;
// - Claude Code then sends feature-flag, MCP-registry and telemetry requests to
//   api.anthropic.com itself, the API host: the broker allows them (it sees hosts, not paths:
//   no TLS interception), so only the switch keeps them from leaving.
// With the switches (real-agents-through-the-broker.test.ts) each CLI reaches nothing but its
// model API.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentArgs, demoDir, ensureAgentsImage, realSession } from './fixtures/real-agent-session.js';

t.before(ensureAgentsImage);

t.test('codex without its config switches tries hosts beyond its API; the broker refuses them and the session completes', async (t) => {
  // Codex makes those requests in the background while it starts; a turn that ended at once could
  // end the session before the last of them (api.github.com was once missing on a loaded CI
  // machine). A 5 s command in the turn keeps the session open long enough for all of them.
  const s = await realSession(t, { runtime: 'codex', label: 'loud-codex', reach: 'broker', steps: [{ exec: 'sleep 5' }, { say: 'done' }] });
  // The demo's provider table and nothing else: no update, analytics, plugins or apps switch.
  const config = readFileSync(path.join(demoDir, 'codex-config.toml'), 'utf8');
  const provider = config.slice(config.indexOf('[model_providers.scripted]'), config.indexOf('[analytics]'));
  writeFileSync(path.join(s.home, '.codex', 'config.toml'), `model = "gpt-5.5"\nmodel_provider = "scripted"\n${provider}`);
  const out = await s.run(['run', ...s.launcherFlags, '--', ...agentArgs('codex', 'say done')]);
  t.equal(out.exitCode, 0, out.stderr.slice(-2000));
  const summary = s.ledgerLines().pop().egress.summary;
  t.match(summary.reached, [{ host: 'api.openai.com', port: 443 }], 'it reached its API');
  const refused = summary.refused.map((r: { host: string; rule: string }) => `${r.host} ${r.rule}`).sort();
  t.comment(`refused: ${refused.join(', ')}`);
  t.ok(
    refused.includes('github.com not-allowlisted') && refused.includes('api.github.com not-allowlisted'),
    'github.com and api.github.com were tried and refused',
  );
  t.ok(refused.includes('ab.chatgpt.com not-allowlisted'), 'ab.chatgpt.com (analytics) was tried and refused');
});

t.test(
  'claude without its switches sends telemetry and feature-flag requests to its API host, which the broker cannot tell apart',
  async (t) => {
    const s = await realSession(t, { runtime: 'claude', label: 'loud-claude', reach: 'broker', steps: [{ say: 'done' }] });
    const unset = ['DISABLE_TELEMETRY', 'DISABLE_AUTOUPDATER', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC'].flatMap((n) => ['-u', n]);
    const out = await s.run([
      'run',
      ...s.launcherFlags,
      '--agent-bin',
      '/usr/bin/env',
      '--',
      ...unset,
      'claude',
      ...agentArgs('claude', 'say done'),
    ]);
    t.equal(out.exitCode, 0, out.stderr.slice(-2000));
    const summary = s.ledgerLines().pop().egress.summary;
    t.same(summary.refused, [], 'nothing refused: everything went to api.anthropic.com');
    const others = (await s.server.requests()).filter((r) => r.api === 'other').map((r) => `${r.method} ${r.path}`);
    t.comment(`besides the model: ${others.join(', ')}`);
    t.ok(
      others.some((p) => p.startsWith('POST /api/event_logging/')),
      'telemetry (event logging) reached the API host',
    );
    t.ok(others.length >= 2, `${others.length} requests besides the model API`);
  },
);

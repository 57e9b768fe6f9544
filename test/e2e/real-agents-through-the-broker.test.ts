// The real Codex CLI and the real Claude Code, each in a session started with the default
// egress (no --network): the container is --network none, its only way out is the session's
// own broker, and the agent calls https://api.openai.com/v1 and https://api.anthropic.com by
// those names, through the relay and the broker, trusting the test CA given with --ca-file.
// The broker resolves the names with the system resolver; the launcher runs in a mount
// namespace of its own whose /etc/hosts points them at the fake internet, where the scripted
// model server answers under the test CA's certificate for both. The agent edits, runs the
// project's tests and commits; the ledger line's egress summary lists the API host reached,
// with its connections and bytes, and nothing else.
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { validateDocument } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import type { FakeInternet } from '@agent-sandbox/testkit';
import {
  agentArgs,
  demoSteps,
  ensureAgentsImage,
  hostGit,
  measuredLimitFlags,
  realSession,
  type RealRuntime,
} from './fixtures/real-agent-session.js';

t.before(ensureAgentsImage);

const hostsSha = () => createHash('sha256').update(readFileSync('/etc/hosts')).digest('hex');

const rows: { runtime: RealRuntime; api: string; host: string; allow: string[] }[] = [
  { runtime: 'codex', api: 'responses', host: 'api.openai.com', allow: ['api.openai.com', 'chatgpt.com', 'auth.openai.com'] },
  { runtime: 'claude', api: 'messages', host: 'api.anthropic.com', allow: ['api.anthropic.com', 'claude.ai', 'platform.claude.com'] },
];
let ran = 0;

/** podman inspect of the session's container, read while it runs. */
async function inspectWhileRunning(name: string): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const r = await runPodman(['container', 'inspect', name], { expect: 'any' });
    if (r.exitCode === 0) return JSON.parse(r.stdout)[0];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return undefined;
}

type Row = (typeof rows)[number];
type Session = Awaited<ReturnType<typeof realSession>>;

/** What podman says the agent was given: no network, the relay as its proxy, the CA copy, the API host by its real name. */
function checkContainerEnv(t: Test, row: Row, inspect: any): void {
  t.ok(inspect, 'podman inspect was read while the session ran');
  t.equal(inspect?.HostConfig?.NetworkMode, 'none', 'the container has no network of its own');
  const env = new Map<string, string>(
    (inspect?.Config?.Env ?? []).map((e: string) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
  t.equal(env.get('HTTPS_PROXY'), 'http://127.0.0.1:3128', 'the agent is pointed at the relay');
  t.equal(env.get('NODE_EXTRA_CA_CERTS'), '/run/sandbox-ca/ca.pem', 'node programs are given the CA copy');
  t.equal(env.get('CODEX_CA_CERTIFICATE'), '/run/sandbox-ca/ca.pem', 'codex is given the CA copy');
  t.notOk(env.has('SSL_CERT_FILE'), 'SSL_CERT_FILE is not set (it would replace the system roots)');
  if (row.runtime === 'claude')
    t.equal(env.get('ANTHROPIC_BASE_URL'), 'https://api.anthropic.com', 'ANTHROPIC_BASE_URL names the real API host');
}

/** The model server answered every step once, addressed by the real name, with the staged canary; nothing else reached it. */
async function checkModelRequests(t: Test, row: Row, s: Session): Promise<void> {
  const requests = (await s.server.requests()).filter((r) => r.api === row.api && !r.side);
  t.same(
    requests.map((r) => r.step),
    demoSteps.map((_, i) => i),
    'the server answered every scripted step once, in order',
  );
  t.ok(
    requests.every((r) => r.host === row.host),
    `every model request carried Host: ${row.host}`,
  );
  t.ok(
    requests.every((r) => r.tokenMatched === true),
    'the bearer token the agent presented is the staged canary',
  );
  const others = (await s.server.requests()).filter((r) => r.api === 'other');
  t.same(others, [], 'no request but the model API reached the server (no telemetry, feature flags or registry: the switches are on)');
}

/** The ledger line's egress: the API host reached, with its connections and bytes, nothing refused, and the CA the agent trusted. */
function checkEgressLine(t: Test, row: Row, line: any, fi: FakeInternet): void {
  t.doesNotThrow(() => validateDocument(LedgerLine, line, 'ledger'), 'the ledger line matches its schema');
  t.match(line, { outcome: 'ran', exitCode: 0, egress: { mode: 'broker', allow: row.allow } });
  const summary = line.egress.summary;
  t.equal(summary.reached.length, 1, `one host reached: ${JSON.stringify(summary.reached)}`);
  t.match(summary.reached[0], { host: row.host, port: 443 });
  t.ok(summary.reached[0].connections >= 1, `${summary.reached[0].connections} connections to ${row.host}`);
  t.ok(
    summary.reached[0].bytesUp > 1000 && summary.reached[0].bytesDown > 1000,
    `bytes up ${summary.reached[0].bytesUp}, down ${summary.reached[0].bytesDown}`,
  );
  t.same(summary.refused, [], 'nothing was refused: the CLI tried no other host');
  t.equal(summary.attempts, summary.reached[0].connections, 'every attempt was a connection to the API host');
  t.same(
    line.egress.ca,
    {
      file: realpathSync(fi.ca.certFile),
      certificates: [
        {
          subject: 'CN=agent-sandbox test CA (one run)',
          sha256: line.egress.ca.certificates[0].sha256,
          notAfter: line.egress.ca.certificates[0].notAfter,
        },
      ],
    },
    'the ledger names the CA the agent trusted',
  );
  t.comment(
    `${row.runtime}: ${summary.reached[0].connections} connections to ${row.host}, ${summary.reached[0].bytesUp} B up, ${summary.reached[0].bytesDown} B down`,
  );
}

/**
 * The broker's log: one line per attempt, each dialed at the address /etc/hosts (the launcher's
 * private one) gave for the name: the broker dials the address it checked.
 */
function checkBrokerLog(t: Test, row: Row, line: any, modelHost: { v4: string; v6: string }): void {
  const attempts = readFileSync(line.egress.log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  t.equal(attempts.length, line.egress.summary.attempts, 'the log has one line per attempt');
  t.ok(
    attempts.every((a) => a.decision === 'allowed' && a.host === row.host && [modelHost.v4, modelHost.v6].includes(a.address)),
    `every attempt went to ${modelHost.v4} or ${modelHost.v6}`,
  );
}

for (const row of rows) {
  t.test(
    `${row.runtime}: the real CLI reaches ${row.host} by its real name through the session's broker, edits, tests and commits`,
    async (t) => {
      const hostsBefore = hostsSha();
      const s = await realSession(t, { runtime: row.runtime, label: `broker-${row.runtime}`, reach: 'broker' });
      const fi = s.fakeInternet!;
      const modelHost = fi.extra[0]!;
      t.notOk(s.launcherFlags.includes('--network'), 'the session is started with the default egress, no --network');
      if (row.runtime === 'codex') {
        const config = readFileSync(path.join(s.home, '.codex', 'config.toml'), 'utf8');
        t.match(config, /^base_url = "https:\/\/api\.openai\.com\/v1"$/m, "codex's base_url names the real API host");
        t.notMatch(config, /127\.0\.0\.1|localhost/, 'and nothing on loopback');
      }

      const running = s.run(['run', ...s.launcherFlags, ...measuredLimitFlags, '--', ...agentArgs(row.runtime)]);
      const inspect = await inspectWhileRunning(`agent-sandbox-${s.id}`);
      const out = await running;
      t.equal(out.exitCode, 0, `the agent exited 0\n${out.stderr.slice(-3000)}`);
      checkContainerEnv(t, row, inspect);

      // The agent's work, from the host.
      t.match(readFileSync(path.join(s.workspace, 'src/sum.mjs'), 'utf8'), /return a \+ b;/, 'the edit is in the host worktree');
      const log = await hostGit(s.workspace, ['log', '--format=%s|%an']);
      t.same(
        log.split('\n'),
        ['sum: add instead of subtract|Scripted Agent', 'initial: sum subtracts|Test'],
        'the commit is in the host git log',
      );
      t.equal(await hostGit(s.workspace, ['status', '--porcelain']), '', 'the worktree is clean');

      await checkModelRequests(t, row, s);

      const line = s.ledgerLines().pop();
      checkEgressLine(t, row, line, fi);
      checkBrokerLog(t, row, line, modelHost);

      // Nothing else in the fake internet was reached, and the host's /etc/hosts is unchanged.
      t.equal(
        await fi.connections('api'),
        0,
        "the fake internet's own api.openai.com servers (not in the private /etc/hosts) saw no connection",
      );
      t.equal(await fi.connections('blocked'), 0, 'blocked.example saw no connection');
      t.equal(hostsSha(), hostsBefore, 'the real /etc/hosts is byte-identical');
      for (const [what, text] of [
        ['stdout', out.stdout],
        ['stderr', out.stderr],
        ['the ledger', readFileSync(s.ledger, 'utf8')],
        ['the broker log', readFileSync(line.egress.log, 'utf8')],
        ['podman inspect', JSON.stringify(inspect)],
      ] as const) {
        t.notOk(text.includes(s.canary), `the canary is not in ${what}`);
      }
      ran++;
    },
  );
}

t.test('every runtime row ran', async (t) => {
  t.equal(ran, rows.length, `${ran} of ${rows.length} rows completed`);
});

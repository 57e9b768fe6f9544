// What the pinned CLIs need to reach their API through the session's broker, measured, one
// variable at a time: each row starts a real session with the default egress (the scripted
// model server answering as api.openai.com / api.anthropic.com in the fake internet, the test
// CA given with --ca-file) and runs the CLI under `env -u ...` inside the container, so the
// launcher sets everything and the row takes away what it tests. A row that cannot reach the
// API ends by `timeout` inside the container (both CLIs retry rather than fail).
//
// Measured with codex-cli 0.171.0 and Claude Code 2.1.197: both send their API traffic to
// HTTPS_PROXY (upper or lower case) as a CONNECT; codex also takes ALL_PROXY but not HTTP_PROXY,
// Claude Code HTTP_PROXY but not ALL_PROXY (so the launcher sets all three); without any, the
// container has no way out and the broker sees nothing. Codex trusts CODEX_CA_CERTIFICATE and
// not NODE_EXTRA_CA_CERTS, Claude Code the reverse; without its variable the CLI tunnels
// through the broker, refuses the test CA's certificate and retries.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { agentArgs, ensureAgentsImage, realSession, type RealRuntime } from './fixtures/real-agent-session.js';

t.before(ensureAgentsImage);

const proxyNames = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy'];
const except = (...keep: string[]) => proxyNames.filter((n) => !keep.includes(n));
const caVariable: Record<RealRuntime, string> = { codex: 'CODEX_CA_CERTIFICATE', claude: 'NODE_EXTRA_CA_CERTS' };

interface Row {
  runtime: RealRuntime;
  label: string;
  unset: string[];
  /** The model server answered (the CLI reached its API). */
  reached: boolean;
  /** The broker saw a CONNECT to the API host (the CLI used the proxy, whatever TLS did then). */
  tunneled: boolean;
}

/** Which of the other proxy variables each CLI also takes for its HTTPS traffic (measured). */
const alsoHonours: Record<RealRuntime, { http: boolean; all: boolean }> = {
  codex: { http: false, all: true },
  claude: { http: true, all: false },
};

const rows: Row[] = (['codex', 'claude'] as const).flatMap((runtime): Row[] => [
  { runtime, label: 'only HTTPS_PROXY', unset: except('HTTPS_PROXY'), reached: true, tunneled: true },
  { runtime, label: 'only https_proxy', unset: except('https_proxy'), reached: true, tunneled: true },
  {
    runtime,
    label: 'only HTTP_PROXY and http_proxy',
    unset: except('HTTP_PROXY', 'http_proxy'),
    reached: alsoHonours[runtime].http,
    tunneled: alsoHonours[runtime].http,
  },
  {
    runtime,
    label: 'only ALL_PROXY and all_proxy',
    unset: except('ALL_PROXY', 'all_proxy'),
    reached: alsoHonours[runtime].all,
    tunneled: alsoHonours[runtime].all,
  },
  { runtime, label: 'no proxy variable', unset: proxyNames, reached: false, tunneled: false },
  {
    runtime,
    label: `every proxy variable but without ${caVariable[runtime]}`,
    unset: [caVariable[runtime]],
    reached: false,
    tunneled: true,
  },
  {
    runtime,
    label: `every proxy variable, without ${caVariable[runtime === 'codex' ? 'claude' : 'codex']}`,
    unset: [caVariable[runtime === 'codex' ? 'claude' : 'codex']],
    reached: true,
    tunneled: true,
  },
]);
let ran = 0;

for (const row of rows) {
  t.test(
    `${row.runtime}, ${row.label}: ${row.reached ? 'reaches its API through the broker' : row.tunneled ? 'tunnels through the broker but cannot verify the server' : 'never reaches the broker'}`,
    async (t) => {
      const s = await realSession(t, { runtime: row.runtime, label: `vars-${row.runtime}`, reach: 'broker', steps: [{ say: 'done' }] });
      const host = row.runtime === 'codex' ? 'api.openai.com' : 'api.anthropic.com';
      const unset = row.unset.flatMap((name) => ['-u', name]);
      const out = await s.run([
        'run',
        ...s.launcherFlags,
        '--agent-bin',
        '/usr/bin/timeout',
        '--',
        '25',
        'env',
        ...unset,
        row.runtime,
        ...agentArgs(row.runtime, 'say done'),
      ]);
      const served = (await s.server.requests()).filter((r) => r.api === 'responses' || r.api === 'messages');
      const line = s.ledgerLines().pop();
      const attempts = readFileSync(line.egress.log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      t.comment(
        `exit ${out.exitCode}; model requests ${served.length}; broker attempts ${attempts.map((a) => `${a.host}:${a.port} ${a.decision}`).join(', ') || 'none'}`,
      );
      t.equal(served.length > 0, row.reached, row.reached ? 'the model server answered' : 'the model server answered nothing');
      t.equal(out.exitCode === 0, row.reached, `exit ${out.exitCode}`);
      t.equal(
        attempts.some((a) => a.host === host && a.decision === 'allowed'),
        row.tunneled,
        row.tunneled ? `the broker relayed a CONNECT to ${host}` : 'the broker saw no attempt to the API',
      );
      t.ok(
        attempts.every((a) => a.host === host),
        'no attempt to any other host',
      );
      ran++;
    },
  );
}

t.test('every row ran', async (t) => {
  t.equal(ran, rows.length, `${ran} of ${rows.length} rows completed`);
});

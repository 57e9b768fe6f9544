// `agent-sandbox log`: the recent sessions in words, from the real executable on a ledger in a
// temporary directory (no podman). One row per session, oldest first: when, which workspace,
// how it ended, how long, its peaks and what the broker refused; `-n` reaches into the rotated
// `.1` when the ledger holds fewer lines; `--json` gives the ledger's own lines, unchanged.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';

const limits = { memory: '4g', memorySwap: '4g', pids: 512, cpus: 2, cpuShares: 512, disk: '8g', timeout: '2h' };
function line(i: number, over: Partial<LedgerLine> = {}): LedgerLine {
  const started = Date.UTC(2026, 0, 1, 10, i);
  return {
    version: 1,
    runId: `${i}`.padStart(16, '0'),
    sessionId: `ws-${i}`,
    runtime: 'codex',
    account: null,
    host: 'local',
    containment: 'podman-rootful',
    image: 'localhost/agent-sandbox-agents:latest',
    limits,
    startedAt: new Date(started).toISOString(),
    endedAt: new Date(started + 75_000).toISOString(),
    exitCode: 0,
    outcome: 'ran',
    reason: 'exited',
    peak: { memoryBytes: 512 * 2 ** 20, pids: 12, cpuSeconds: 3.25 },
    ...over,
  };
}

const refusedByBroker = line(3, {
  sessionId: 'claude-fix',
  runtime: 'claude',
  exitCode: 1,
  egress: {
    mode: 'broker',
    allow: ['api.anthropic.com'],
    summary: {
      session: 'claude-fix',
      attempts: 7,
      allowed: 0,
      denied: 0,
      failed: 7,
      reached: [],
      refused: [{ host: 'api.anthropic.com', port: 443, rule: 'resolve-failed', decision: 'failed', count: 7 }],
    },
  },
});

async function ledgerWith(t: Parameters<typeof tempDir>[0], current: LedgerLine[], older: LedgerLine[] = []) {
  const dir = await tempDir(t, 'astest-log-');
  const ledger = path.join(dir, 'ledger.jsonl');
  const text = (lines: LedgerLine[]) => lines.map((l) => `${JSON.stringify(l)}\n`).join('');
  await writeFile(ledger, `${text(current)}not a ledger line\n`);
  if (older.length > 0) await writeFile(`${ledger}.1`, text(older));
  return { ledger, env: { HOME: dir, PATH: process.env['PATH'] ?? '/usr/bin:/bin' } };
}

t.test('a table of the recent sessions on stdout, so it pipes: when, which workspace, how each ended, peaks and egress', async (t) => {
  const { ledger, env } = await ledgerWith(t, [
    line(1),
    line(2, { outcome: 'refused', reason: 'workspace-busy', exitCode: 92, peak: null }),
    refusedByBroker,
  ]);
  const out = await runBin('agent-sandbox', ['log', '--ledger', ledger], { env });
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(out.stderr, '', 'nothing on stderr: the table is the output (agent-sandbox log | less)');
  const rows = out.stdout.trimEnd().split('\n');
  t.match(rows[0], /^STARTED\s+WORKSPACE\s+RUNTIME\s+HOST\s+ENDED\s+TOOK\s+PEAK\s+EGRESS$/);
  t.equal(rows.length, 4, "a header and one row per session; a line that is not the ledger's is skipped");
  t.match(rows[1], /^2026-01-01T10:01:00Z\s+ws-1\s+codex\s+local\s+exit 0 exited\s+1m15s\s+512m 12 pids 3\.3s cpu\s+-$/);
  t.match(rows[2], /ws-2\s+codex\s+local\s+refused 92 workspace-busy\s+1m15s\s+-/);
  t.match(rows[3], /claude-fix\s+claude\s+local\s+exit 1 exited\s+1m15s\s+.*0 allowed, refused api\.anthropic\.com x7 \(resolve-failed\)$/);
});

t.test('-n N: the last N sessions, from the rotated .1 too when the ledger holds fewer', async (t) => {
  const { ledger, env } = await ledgerWith(t, [line(5), line(6)], [line(1), line(2), line(3), line(4)]);
  const three = await runBin('agent-sandbox', ['log', '--ledger', ledger, '-n', '3'], { env });
  t.equal(three.exitCode, 0, three.stderr);
  t.same(
    three.stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((r) => r.split(/\s+/)[1]),
    ['ws-4', 'ws-5', 'ws-6'],
    'oldest first, the newest last',
  );
  const one = await runBin('agent-sandbox', ['log', '--ledger', ledger, '-n', '1'], { env });
  t.same(
    one.stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((r) => r.split(/\s+/)[1]),
    ['ws-6'],
  );
  const bad = await runBin('agent-sandbox', ['log', '--ledger', ledger, '-n', 'lots'], { env });
  t.equal(bad.exitCode, 80);
  t.match(bad.stderr, /-n: expected a whole number of sessions/);
});

t.test("--json: the ledger's own lines on stdout, unchanged", async (t) => {
  const lines = [line(1), refusedByBroker];
  const { ledger, env } = await ledgerWith(t, lines);
  const out = await runBin('agent-sandbox', ['log', '--ledger', ledger, '--json'], { env });
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(out.stdout, lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
});

t.test('the default ledger, and an empty one', async (t) => {
  const dir = await tempDir(t, 'astest-log-default-');
  const out = await runBin('agent-sandbox', ['log'], { env: { HOME: dir, PATH: process.env['PATH'] ?? '/usr/bin:/bin' } });
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(out.stderr, `no sessions in ${dir}/.local/state/agent-sandbox/ledger.jsonl\n`);
  const relative = await runBin('agent-sandbox', ['log', '--ledger', 'ledger.jsonl'], { env: { HOME: dir } });
  t.equal(relative.exitCode, 80);
});

t.test('log is a command like every other: a typo suggests it, --help shows its flags', async (t) => {
  const out = await runBin('agent-sandbox', ['lgo'], { env: { HOME: '/nonexistent' } });
  t.equal(out.exitCode, 80);
  t.match(out.stderr, /unknown command "lgo": Did you mean log\?/);
  const help = await runBin('agent-sandbox', ['log', '--help'], { env: { HOME: '/nonexistent' } });
  t.equal(help.exitCode, 0);
  for (const flag of ['--ledger', '-n', '--json']) t.match(help.stdout, flag);
});

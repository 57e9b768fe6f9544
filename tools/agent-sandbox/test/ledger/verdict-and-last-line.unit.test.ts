// How a session ended, without podman: the end (session/end.ts) of a run the launcher stopped
// and of one it did not, the line that states it (ranLine) or a refusal (refusedLine), each
// valid against the ledger schema; and the last stderr line in words: the exit status, the
// reason, and the hosts the broker refused with their rules, most first, a few then a count,
// every name the session chose made safe for a terminal.
import t from 'tap';
import { ToolError } from '@agent-sandbox/shared';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import type { EgressSummary } from '@agent-sandbox/shared/schemas/egress-proxy';
import { describeEnd, describeRefused, ranLine, refusedLine, sessionEnd, sessionIdentity, type SessionIdentity } from '../../dist/index.js';

const identity: SessionIdentity = {
  ...sessionIdentity({ workspace: 'fix-1', runtime: 'claude' }, 'local', 'podman-rootful'),
  runId: '0123456789abcdef',
};
const peak = { memoryBytes: 1 << 30, pids: 38, cpuSeconds: 12.5 };
const disk = { writtenBytes: 10, writtenFiles: 1, limitBytes: 100, limitFiles: 10, walks: 1, exceeded: null };

function summary(refused: EgressSummary['refused'], others = 0): EgressSummary {
  return {
    session: 'fix-1',
    attempts: 20,
    allowed: 3,
    denied: 9,
    failed: 8,
    reached: [],
    refused,
    ...(others ? { others: { reached: { rows: 0, connections: 0 }, refused: { rows: others, count: others } } } : {}),
  };
}

function ended(over: { stopped?: string; reason?: string; egress?: EgressSummary } = {}) {
  const run = {
    exitCode: over.stopped ? 137 : 1,
    startedAt: identity.startedAt,
    endedAt: new Date().toISOString(),
    reason: over.reason ?? 'exited',
    attribution: { evidence: { basis: 'exit-status' }, peak, containerId: 'c'.repeat(64) },
    disk,
    ...(over.stopped ? { stopped: over.stopped } : {}),
  };
  const plan = {
    runPlan: { network: 'none' },
    credentials: { expiryOverride: false },
    egress: { mode: 'broker', allow: ['api.anthropic.com'], logPath: '/state/egress/fix-1.jsonl' },
    publish: { ports: [] },
  };
  return sessionEnd(run as never, { nestedGit: [] }, plan as never, { noNewPrivs: false, ...(over.egress ? { egress: over.egress } : {}) });
}

t.test('a session that ran: its end and its line, valid against the ledger schema', async (t) => {
  const end = ended({ egress: summary([{ host: 'api.anthropic.com', port: 443, rule: 'resolve-failed', decision: 'failed', count: 7 }]) });
  t.match(end, {
    exitCode: 1,
    reason: 'exited',
    peak,
    evidence: { basis: 'exit-status', network: 'none', containerId: 'c'.repeat(64), noNewPrivs: false },
    egress: { mode: 'broker', log: '/state/egress/fix-1.jsonl' },
  });
  t.notOk('stopped' in end.evidence, 'nothing stopped it');
  const line = ranLine(identity, end);
  t.ok(LedgerLine(line), JSON.stringify(LedgerLine.errors));
  t.match(line, { outcome: 'ran', exitCode: 1, sessionId: 'fix-1', runtime: 'claude', host: 'local', runId: '0123456789abcdef' });
  t.equal(describeEnd(line), 'agent-sandbox: session fix-1 ended: exit 1, exited; egress: refused api.anthropic.com x7 (resolve-failed)');
});

t.test('a session the launcher stopped says so in its evidence and its reason', async (t) => {
  const line = ranLine(identity, ended({ stopped: 'timeout', reason: 'timeout' }));
  t.match(line, { exitCode: 137, reason: 'timeout', evidence: { stopped: 'timeout' } });
  t.equal(describeEnd(line), 'agent-sandbox: session fix-1 ended: exit 137, timeout', 'no egress part when nothing was refused');
});

t.test('a refusal: the error code is the reason, its exit the status, and the last line says it was refused', async (t) => {
  const { line, exitCode, message } = refusedLine(
    identity,
    new ToolError('unsafePath', 'workspace-not-pinned', 'workspace /x is not directly under /r/workspaces'),
  );
  t.equal(exitCode, 86);
  t.equal(message, 'workspace /x is not directly under /r/workspaces');
  t.ok(LedgerLine(line));
  t.match(line, { outcome: 'refused', reason: 'workspace-not-pinned', exitCode: 86, peak: null });
  t.equal(
    describeEnd({ ...line, remote: { via: 'ssh' }, host: 'node1' }),
    'agent-sandbox: session fix-1 on node1 was refused: exit 86, workspace-not-pinned',
  );
  t.equal(refusedLine(identity, new Error('boom')).exitCode, 91, 'anything else is a bug (91)');
});

t.test('the refused hosts: grouped by host and rule, most first, three named and the rest counted, names made safe', async (t) => {
  const rows: EgressSummary['refused'] = [
    { host: 'a.example', port: 443, rule: 'not-allowlisted', decision: 'denied', count: 2 },
    { host: 'a.example', port: 80, rule: 'not-allowlisted', decision: 'denied', count: 3 },
    { host: 'api.anthropic.com', port: 443, rule: 'resolve-failed', decision: 'failed', count: 7 },
    { host: 'evil\u001b[2J.example', port: 443, rule: 'not-allowlisted', decision: 'denied', count: 1 },
    { host: null, port: null, rule: 'bad-request', decision: 'denied', count: 4 },
  ];
  const words = describeRefused(summary(rows, 12))!;
  t.equal(words, 'refused api.anthropic.com x7 (resolve-failed), a.example x5 (not-allowlisted), (no name) x4 (bad-request) and 13 more');
  t.notMatch(describeRefused(summary(rows.slice(3)))!, /\u001b/, 'a control character the session chose never reaches the terminal');
  t.equal(describeRefused(summary([])), undefined, 'nothing refused: no words');
});

// Every ledger line is under 64 KiB whatever the session did, stays valid JSON and valid against
// the ledger schema, and says what was cut; the ledger file rotates at its size, keeping one
// older file. The writer itself (appendLedger), on files in a temporary directory.
import t from 'tap';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { validateDocument } from '@agent-sandbox/shared/json-input';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { appendLedger, boundLine, maxLineBytes, rotateLedger } from '../../dist/index.js';

const base: LedgerLine = {
  version: 1,
  runId: '0123456789abcdef',
  sessionId: 'flood',
  runtime: 'codex',
  account: null,
  host: 'here',
  containment: 'podman-rootful',
  image: 'localhost/agent-sandbox-agents:latest',
  limits: { memory: '4g', memorySwap: '4g', pids: 512, cpus: 2, cpuShares: 512, disk: '8g', timeout: '2h' },
  startedAt: '2026-01-01T00:00:00.000Z',
  endedAt: '2026-01-01T00:01:00.000Z',
  exitCode: 0,
  outcome: 'ran',
  reason: 'exited',
  peak: null,
};

/** What a session can make long: 100 000 nested repositories, 51 000 refused names, a 200 000-byte message. */
const huge: LedgerLine = {
  ...base,
  nestedGit: Array.from({ length: 100_000 }, (_, i) => ({ path: `n${i}/.git`, type: 'gitdir' as const, change: 'added' as const })),
  entrypoint: { lines: Array.from({ length: 20 }, (_, i) => `line ${i} ${'x'.repeat(80)}`), truncated: false },
  egress: {
    mode: 'broker',
    allow: ['api.openai.com'],
    summary: {
      session: 'flood',
      attempts: 51_000,
      allowed: 0,
      denied: 51_000,
      failed: 0,
      reached: [],
      refused: Array.from({ length: 51_000 }, (_, i) => ({
        host: `n${i}.flood.example`,
        port: 443,
        rule: 'not-allowlisted',
        decision: 'denied' as const,
        count: 1,
      })),
    },
  },
  message: 'm'.repeat(200_000),
};

const size = (l: LedgerLine) => Buffer.byteLength(JSON.stringify(l)) + 1;

t.test('a line of 10 MB (nested repositories, refused names, a long message) is written under 64 KiB, valid, and marked', async (t) => {
  const dir = await tempDir(t, 'ledger-bound-');
  const file = path.join(dir, 'ledger.jsonl');
  t.ok(size(huge) > 10_000_000, `the line as the session made it: ${size(huge)} bytes`);
  const written = appendLedger(file, huge);
  const text = readFileSync(file, 'utf8');
  t.ok(Buffer.byteLength(text) < 64 * 1024, `the written line is ${Buffer.byteLength(text)} bytes`);
  const parsed = validateDocument(LedgerLine, JSON.parse(text), 'line');
  t.same(parsed, written, 'what was written is what appendLedger returned');
  t.equal(parsed.truncated?.bytes, size(huge) - 1, 'it says how large it was');
  t.same([...(parsed.truncated?.fields ?? [])].sort(), ['egress.summary.refused', 'message', 'nestedGit'], 'it names what was cut');
  t.match(parsed, { sessionId: 'flood', reason: 'exited', runId: base.runId }, 'who and how it ended are kept');
  t.ok(
    (parsed.nestedGit?.length ?? 0) > 0 && parsed.nestedGit![0]!.path === 'n0/.git',
    `the first nested repositories are kept (${parsed.nestedGit?.length})`,
  );
  t.same(parsed.entrypoint, huge.entrypoint, 'a field that is not among the largest is untouched');
});

t.test('a line that fits is written unchanged, without a mark', async (t) => {
  const line = { ...base, nestedGit: huge.nestedGit!.slice(0, 10) };
  t.equal(boundLine(line), line);
  t.ok(size(line) < maxLineBytes);
});

t.test('a line that cannot be cut to fit (an object of 100 000 keys) keeps who the session was and how it ended', async (t) => {
  const evidence = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
  const line = boundLine({ ...base, evidence }, (l) => LedgerLine(l));
  t.ok(size(line) < 64 * 1024);
  t.ok(LedgerLine(line), 'valid against the schema');
  t.match(line, { sessionId: 'flood', reason: 'exited', exitCode: 0, truncated: { fields: ['*'] } });
  t.notOk('evidence' in line);
});

t.test('the ledger rotates past its size: the full file becomes <ledger>.1, the next line starts a new file', async (t) => {
  const dir = await tempDir(t, 'ledger-rotate-');
  const file = path.join(dir, 'ledger.jsonl');
  writeFileSync(file, 'a'.repeat(1000));
  writeFileSync(`${file}.1`, 'older');
  t.notOk(rotateLedger(file, 24, 1024), 'under the size: not rotated');
  t.ok(rotateLedger(file, 25, 1024), 'past it: rotated');
  t.equal(statSync(`${file}.1`).size, 1000, 'the full file is now .1 (the older .1 is gone)');
  appendLedger(file, base);
  t.same(JSON.parse(readFileSync(file, 'utf8')), base, 'the line begins a new file');
});

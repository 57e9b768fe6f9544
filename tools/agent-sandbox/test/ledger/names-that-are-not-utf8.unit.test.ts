// A name a session wrote with bytes that are not UTF-8 reaches the ledger as `\xNN` text: the
// file is well-formed UTF-8 and every string in it well-formed Unicode, so a strict JSON parser
// reads it (issue 32, finding 11). The control: the same line written as it is in memory holds
// a lone surrogate, `\udc9b`, which such a parser refuses.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { nameFromBytes } from '@agent-sandbox/shared/byte-names';
import { appendLedger, ranLine, sessionEnd, sessionIdentity } from '../../dist/index.js';

/** A high surrogate with no low one after it, or a low one with no high one before it. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What a strict reader does: bytes must be UTF-8, and no string may hold a lone surrogate. */
function strictlyParsed(bytes: Buffer): unknown {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  if (/\\ud[89a-f][0-9a-f]{2}/i.test(text)) throw new Error('a \\uDxxx escape: a lone surrogate');
  return JSON.parse(text, (_key, value: unknown) => {
    if (typeof value === 'string' && loneSurrogate.test(value))
      throw new Error(`a string that is not well-formed Unicode: ${JSON.stringify(value)}`);
    return value;
  });
}

function lineWithNames() {
  const raw = nameFromBytes(Buffer.from([0x72, 0x61, 0x77, 0x2d, 0x9b, 0x2d, 0xff, 0x2f, 0x2e, 0x67, 0x69, 0x74])); // raw-\x9b-\xff/.git
  const disk = { writtenBytes: 10, writtenFiles: 1, limitBytes: 100, limitFiles: 10, walks: 1, exceeded: null };
  const run = {
    exitCode: 0,
    startedAt: new Date().toISOString(),
    endedAt: new Date().toISOString(),
    reason: 'exited',
    attribution: { evidence: { basis: 'exit-status' }, peak: null, containerId: 'c'.repeat(64) },
    disk,
  };
  const plan = {
    runPlan: { network: 'none' },
    credentials: { expiryOverride: false },
    egress: { mode: 'broker', allow: [], logPath: '/state/egress/names-1.jsonl' },
    publish: { ports: [] },
  };
  const end = sessionEnd(run as never, { nestedGit: [{ path: raw, change: 'added', type: 'gitdir' }] }, plan as never, {
    noNewPrivs: false,
  });
  return {
    raw,
    line: ranLine(
      { ...sessionIdentity({ workspace: 'names-1', runtime: 'claude' }, 'local', 'podman-rootful'), runId: '0123456789abcdef' },
      end,
    ),
  };
}

t.test(
  'a nested repository named with bytes that are not UTF-8: the ledger says raw-\\x9b-\\xff/.git, and a strict parser reads it',
  async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ledger-names-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const { raw, line } = lineWithNames();
    t.throws(
      () => strictlyParsed(Buffer.from(`${JSON.stringify(line)}\n`)),
      /lone surrogate/,
      'control: the line as it is in memory carries \\udc9b, which a strict parser refuses',
    );
    const written = appendLedger(path.join(dir, 'ledger.jsonl'), line);
    const read = strictlyParsed(readFileSync(path.join(dir, 'ledger.jsonl'))) as { nestedGit: { path: string }[] };
    t.equal(read.nestedGit[0]?.path, 'raw-\\x9b-\\xff/.git', 'each byte as the text \\xNN, as the terminal shows it');
    t.same(written.nestedGit, read.nestedGit, "the line returned (the result file, --json, a node's verdict) is the line written");
    t.equal(raw.length, 'raw-?-?/.git'.length, 'the name in memory kept its two bytes (U+DC9B, U+DCFF), for the file system calls');
  },
);

t.test('a line with nothing to escape is written as it is', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ledger-names-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { line } = lineWithNames();
  const plain = { ...line, nestedGit: [{ path: 'café\\x9b/.git', change: 'added' as const, type: 'gitdir' as const }] };
  appendLedger(path.join(dir, 'ledger.jsonl'), plain);
  t.same(
    strictlyParsed(readFileSync(path.join(dir, 'ledger.jsonl'))),
    JSON.parse(JSON.stringify(plain)),
    'valid UTF-8 (a backslash too) is unchanged',
  );
});

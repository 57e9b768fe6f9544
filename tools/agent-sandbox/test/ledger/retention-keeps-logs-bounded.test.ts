// The per-session logs beside the ledger do not pile up: the retention keeps the newest 200 per
// kind, none older than 30 days, at most 1 GiB, never a file written in the last 10 minutes;
// `agent-sandbox prune` applies it by hand (JSON out, --dry-run), and only ever removes regular
// files named as the launcher names them. The real executable on a state directory of its own.
import t from 'tap';
import { mkdirSync, readdirSync, symlinkSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import { validateDocument } from '@agent-sandbox/shared/json-input';
import { PruneOutput } from '@agent-sandbox/shared/validators/agent-sandbox-reports';
import { applyRetention, planRetention } from '../../dist/index.js';

const day = 24 * 3600 * 1000;
const hex = (i: number) => i.toString(16).padStart(16, '0');

/** A state directory: `n` egress logs and `n` exec logs, the i-th (i+1) hours old, and two files prune must never touch. */
function stateDir(dir: string, n: number, now = Date.now()) {
  for (const kind of ['egress', 'logs']) mkdirSync(path.join(dir, kind), { recursive: true });
  for (let i = 0; i < n; i += 1) {
    const when = new Date(now - (i + 1) * 3600 * 1000);
    const egress = path.join(dir, 'egress', `ws${i}-${hex(i)}.jsonl`);
    const exec = path.join(dir, 'logs', `ws${i}-${when.toISOString().replace(/[:.]/g, '-')}.log`);
    for (const f of [egress, exec]) {
      writeFileSync(f, 'x'.repeat(100));
      utimesSync(f, when, when);
    }
  }
  writeFileSync(path.join(dir, 'egress', 'notes.txt'), 'mine');
  symlinkSync('/etc/hostname', path.join(dir, 'egress', `ws-link-${hex(0)}.jsonl`));
  utimesSync(path.join(dir, 'egress', 'notes.txt'), new Date(now - 90 * day), new Date(now - 90 * day));
}

t.test(
  'the plan: the newest 200, none older than 30 days, at most the byte budget, never a file written in the last 10 minutes',
  async (t) => {
    const now = 1_000 * day;
    const files = Array.from({ length: 300 }, (_, i) => ({ path: `f${i}`, mtimeMs: now - i * 3 * 3600 * 1000, bytes: 4096 }));
    const plan = planRetention(files, { keep: 200, olderThanMs: 30 * day, maxBytes: 2 ** 30 }, now);
    t.equal(plan.keep.length, 200);
    t.same(plan.keep.map((f) => f.path).slice(0, 3), ['f0', 'f1', 'f2'], 'the newest are kept');
    const old = planRetention(files, { keep: 1000, olderThanMs: 30 * day, maxBytes: 2 ** 30 }, now);
    t.equal(old.keep.length, 241, 'every file of the last 30 days (3-hourly: 241), none older');
    const small = planRetention(files, { keep: 1000, olderThanMs: 1000 * day, maxBytes: 10 * 4096 }, now);
    t.equal(small.keep.length, 10, 'the byte budget');
    const active = planRetention([{ path: 'live', mtimeMs: now - 60_000, bytes: 2 ** 40 }], { keep: 0, olderThanMs: 0, maxBytes: 0 }, now);
    t.same(
      active.keep.map((f) => f.path),
      ['live'],
      'a file written a minute ago stays, whatever the policy',
    );
  },
);

t.test("after a session, the retention leaves 200 of 260 per kind and removes only the launcher's own files", async (t) => {
  const dir = await tempDir(t, 'retention-');
  stateDir(dir, 260);
  const result = applyRetention(dir);
  t.equal(result.removed.length, 120, '60 of each kind removed');
  t.equal(result.kept, 400);
  t.equal(readdirSync(path.join(dir, 'logs')).length, 200);
  t.ok(existsSync(path.join(dir, 'egress', 'notes.txt')), 'a file not named as the launcher names them stays');
  t.ok(existsSync(path.join(dir, 'egress', `ws-link-${hex(0)}.jsonl`)), 'a link stays (and its target is untouched)');
});

t.test(
  'agent-sandbox prune --dry-run says what would go and removes nothing; prune --older-than 2d --keep 10 removes it; both print the JSON',
  async (t) => {
    const dir = await tempDir(t, 'prune-');
    stateDir(dir, 60);
    const ledger = path.join(dir, 'ledger.jsonl');
    const dry = await runBin('agent-sandbox', ['prune', '--ledger', ledger, '--older-than', '2d', '--keep', '10', '--dry-run']);
    t.equal(dry.exitCode, 0, dry.stderr);
    const planned = validateDocument(PruneOutput, dry.json, 'stdout');
    t.equal(planned.removed.length, 100, '50 per kind past the 10 newest');
    t.equal(readdirSync(path.join(dir, 'logs')).length, 60, 'nothing removed on a dry run');
    const real = await runBin('agent-sandbox', ['prune', '--ledger', ledger, '--older-than', '2d', '--keep', '10']);
    const done = validateDocument(PruneOutput, real.json, 'stdout');
    t.same(done.removed, planned.removed, 'what the dry run said is what went');
    t.ok(done.bytes > 0, `${done.bytes} bytes freed`);
    t.equal(readdirSync(path.join(dir, 'logs')).length, 10);
    t.match(real.stderr, /removed 100 per-session logs/);
  },
);

t.test('prune --help names its flags; a bad value is refused with 80', async (t) => {
  const help = await runBin('agent-sandbox', ['prune', '--help']);
  t.equal(help.exitCode, 0);
  for (const flag of ['--older-than', '--keep', '--max-bytes', '--dry-run', '--ledger']) t.match(help.stdout + help.stderr, flag);
  const bad = await runBin('agent-sandbox', ['prune', '--keep', 'many', '--ledger', '/tmp/x/ledger.jsonl']);
  t.equal(bad.exitCode, 80);
  t.equal(bad.json?.error?.code, 'bad-flag');
});

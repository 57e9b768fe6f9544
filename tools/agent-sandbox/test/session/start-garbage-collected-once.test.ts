// A session's launcher collects its start's garbage once, when the start is over (the container
// has run for 5 s and the first disk count is done), so that V8's memory reducer does not do it
// later in a quiet session's minute (docs/performance.md, section 13). Seen from inside the
// launcher by a preloaded observer of V8's collections (NODE_OPTIONS=--require), which writes each
// one to a file: a session that sleeps past the start has one forced full collection, after 5 s;
// one that ends at once has none. Both files show the observer saw collections at all.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Teardown } from '@agent-sandbox/testkit';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';

const requirements = sessionNeeds();

/** A preload that writes `<ms since the process began> <kind> <forced?>` for each collection. */
const observer = `
const { PerformanceObserver, constants } = require('node:perf_hooks');
const fs = require('node:fs');
const out = process.env.ASTEST_GC_LOG;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const major = e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
    const forced = (e.detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0;
    fs.appendFileSync(out, Math.round(e.startTime) + ' ' + (major ? 'major' : 'other') + ' ' + (forced ? 'forced' : 'v8') + '\\n');
  }
}).observe({ entryTypes: ['gc'] });
`;

interface Collection {
  atMs: number;
  major: boolean;
  forced: boolean;
}

async function collectionsOf(
  t: Teardown,
  label: string,
  script: string,
): Promise<{ exitCode: number; stderr: string; seen: Collection[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'astest-gc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const hook = path.join(dir, 'observer.cjs');
  const log = path.join(dir, 'gc.log');
  writeFileSync(hook, observer);
  writeFileSync(log, '');
  const fx = await sessionFixture(t, label);
  const flags = fx.flags.slice(0, fx.flags.indexOf('--agent-bin'));
  const end = await fx.run(['run', ...flags, '--agent-bin', 'sh', '--', '-c', script], {
    env: { NODE_OPTIONS: `--require ${hook}`, ASTEST_GC_LOG: log },
  });
  const seen = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [at, kind, how] = line.split(' ');
      return { atMs: Number(at), major: kind === 'major', forced: how === 'forced' };
    });
  return { exitCode: end.exitCode, stderr: end.stderr, seen };
}

t.test('a session that runs past its start has one forced full collection, after 5 s of the container', requirements, async (t) => {
  const r = await collectionsOf(t, 'gc-long', 'sleep 8');
  t.equal(r.exitCode, 0, r.stderr.slice(-400));
  t.ok(r.seen.length > 0, `control: the observer saw ${r.seen.length} collections in the launcher`);
  const forced = r.seen.filter((c) => c.forced);
  t.equal(forced.length, 1, `one forced collection (${JSON.stringify(forced)})`);
  t.ok(forced[0]?.major, 'a full one');
  t.ok((forced[0]?.atMs ?? 0) >= 5000, `after the settle time (${forced[0]?.atMs} ms after the launcher began)`);
});

t.test('a session that ends at once has none: its start never settled', requirements, async (t) => {
  const r = await collectionsOf(t, 'gc-short', 'exit 0');
  t.equal(r.exitCode, 0, r.stderr.slice(-400));
  t.ok(r.seen.length > 0, `control: the observer saw ${r.seen.length} collections in the launcher`);
  t.same(
    r.seen.filter((c) => c.forced),
    [],
    'no forced collection',
  );
});

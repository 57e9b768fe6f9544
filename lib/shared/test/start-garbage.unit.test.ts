// The collection of a start's garbage (lib/shared/src/start-garbage.ts): it is a full collection
// made now, and it leaves V8's flags as they were, so a code cache made after it is still taken by
// a fresh node. The control sets the same flag and leaves it set: that cache is refused.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const module = fileURLToPath(new URL('../dist/start-garbage.js', import.meta.url));
const source = 'function add(a, b) { return a + b; } add(1, 2);';

/** Runs `body` in a fresh node (ESM), with the module as `m` and the source as `source`; its stdout. */
function inFreshNode(body: string): string {
  const script = `import * as m from ${JSON.stringify(module)}; import v8 from 'node:v8'; import vm from 'node:vm'; import fs from 'node:fs'; const source = ${JSON.stringify(source)}; ${body}`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

/** Makes a code cache of `source` after `before` has run, in one node, and asks a second whether it takes it. */
function cacheTakenAfter(t: { teardown(fn: () => void): void }, before: string): boolean {
  const dir = mkdtempSync(path.join(tmpdir(), 'start-garbage-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'cache');
  inFreshNode(`${before}; fs.writeFileSync(${JSON.stringify(file)}, new vm.Script(source).createCachedData());`);
  const verdict = inFreshNode(
    `const s = new vm.Script(source, { cachedData: fs.readFileSync(${JSON.stringify(file)}) }); process.stdout.write(String(s.cachedDataRejected));`,
  );
  return verdict === 'false';
}

t.test('it makes a full collection at once, and says so', async (t) => {
  const out = inFreshNode(`
    const { PerformanceObserver, constants } = await import('node:perf_hooks');
    const seen = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) seen.push(e.detail); }).observe({ entryTypes: ['gc'] });
    let garbage = []; for (let i = 0; i < 200000; i++) garbage.push({ i }); garbage = undefined;
    const said = m.collectStartGarbage();
    await new Promise((r) => setTimeout(r, 50));
    const forcedMajor = seen.filter((d) => d.kind === constants.NODE_PERFORMANCE_GC_MAJOR && (d.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED));
    process.stdout.write(JSON.stringify({ said, forcedMajor: forcedMajor.length, gcGlobal: typeof globalThis.gc }));
  `);
  const r = JSON.parse(out) as { said: boolean; forcedMajor: number; gcGlobal: string };
  t.equal(r.said, true, 'it says it collected');
  t.ok(r.forcedMajor >= 1, `V8 reported ${r.forcedMajor} forced major collection(s)`);
  t.equal(r.gcGlobal, 'undefined', 'and no gc is left on the global object');
});

t.test("a code cache made after it is still taken by a fresh node: V8's flags are as they were", async (t) => {
  t.equal(cacheTakenAfter(t, 'm.collectStartGarbage()'), true, 'the cache made after the collection is taken');
  t.equal(cacheTakenAfter(t, ''), true, 'control: a cache made with nothing before it is taken');
  t.equal(
    cacheTakenAfter(t, "v8.setFlagsFromString('--expose-gc'); vm.runInNewContext('gc')()"),
    false,
    'control: with --expose-gc left set, the same cache is refused (the flag hash moved)',
  );
});

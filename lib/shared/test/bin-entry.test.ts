// What a bin shim runs: the bundle while it is newer than the build records it was made from,
// else the unbundled entry; the bundle runs as node's own CommonJS module, import() included
// (the launcher loads execa that way).
import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { binEntry } from '../dist/bin-entry.cjs';

const binEntryModule = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin-entry.cjs');

/** A tool laid out as the repo lays one out, with a bundle that imports an ES module beside it. */
async function fakeTool(t: { teardown(fn: () => void): void }) {
  // (lib/testkit's tempDir would make shared depend on testkit, which depends on shared.)
  const root = mkdtempSync(path.join(tmpdir(), 'bin-entry-test-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const tool = path.join(root, 'tools', 'fake');
  for (const dir of ['bin', 'dist']) mkdirSync(path.join(tool, dir), { recursive: true });
  const shim = path.join(tool, 'bin', 'fake');
  writeFileSync(shim, '#!/usr/bin/env node\n');
  writeFileSync(path.join(tool, 'dist', 'greeting.mjs'), "export const word = 'bundle';\n");
  const bundle = path.join(tool, 'dist', 'fake.bundle.cjs');
  writeFileSync(
    bundle,
    "exports.run = async () => { const { word } = await import('./greeting.mjs'); process.stdout.write(`${word} ${__filename.endsWith('fake.bundle.cjs')}`); };\n",
  );
  writeFileSync(path.join(tool, 'dist', 'cli.js'), "export const run = async () => { process.stdout.write('unbundled'); };\n");
  writeFileSync(path.join(tool, 'dist', 'package.json'), '{"type":"module"}\n');
  const record = path.join(tool, 'tsconfig.tsbuildinfo');
  writeFileSync(record, '{}\n');
  writeFileSync(path.join(tool, 'dist', 'fake.bundle.json'), JSON.stringify({ inputs: ['../tsconfig.tsbuildinfo'] }));
  const at = (file: string, seconds: number) => utimesSync(file, seconds, seconds);
  at(record, 1_000);
  at(bundle, 2_000);
  return { root, tool, shim, bundle, record, at };
}

const runShim = (shim: string) =>
  execa(process.execPath, ['-e', `require(${JSON.stringify(binEntryModule)}).runBin(${JSON.stringify(shim)}, 'fake')`], { reject: false });

t.test('a bundle newer than its build records runs; an older one does not', async (t) => {
  const fx = await fakeTool(t);
  t.same(binEntry(fx.shim, 'fake'), { kind: 'bundle', file: fx.bundle });
  fx.at(fx.record, 3_000); // `tsc -b` emitted after the bundle was made
  t.equal(binEntry(fx.shim, 'fake').kind, 'unbundled');
  t.equal(binEntry(fx.shim, 'fake').file, path.join(fx.tool, 'dist', 'cli.js'));
});

t.test('a missing manifest or build record means the unbundled entry', async (t) => {
  const fx = await fakeTool(t);
  writeFileSync(path.join(fx.tool, 'dist', 'fake.bundle.json'), JSON.stringify({ inputs: ['../gone.tsbuildinfo'] }));
  t.equal(binEntry(fx.shim, 'fake').kind, 'unbundled', 'record gone');
  writeFileSync(path.join(fx.tool, 'dist', 'fake.bundle.json'), JSON.stringify({ inputs: [] }));
  t.equal(binEntry(fx.shim, 'fake').kind, 'unbundled', 'empty manifest');
});

t.test('a shim reached through a symlink finds its own dist', async (t) => {
  const fx = await fakeTool(t);
  const link = path.join(fx.root, 'fake-link');
  symlinkSync(fx.shim, link);
  t.same(binEntry(link, 'fake'), { kind: 'bundle', file: fx.bundle });
});

t.test('a fresh bundle runs as a CommonJS module of its own file, and can import()', async (t) => {
  const fx = await fakeTool(t);
  const result = await runShim(fx.shim);
  t.equal(result.stdout, 'bundle true', result.stderr);
  t.equal(result.exitCode, 0);
});

t.test('a stale bundle never runs: the unbundled entry does', async (t) => {
  const fx = await fakeTool(t);
  fx.at(fx.record, 3_000);
  const result = await runShim(fx.shim);
  t.equal(result.stdout, 'unbundled', result.stderr);
});

/** The fake tool's shim as the launcher's is written (codeCache), run with `command` and a home of its own. */
async function cachedTool(t: { teardown(fn: () => void): void }, bundleText: string) {
  const fx = await fakeTool(t);
  writeFileSync(fx.shim, `require(${JSON.stringify(binEntryModule)}).runBin(__filename, 'fake', { codeCache: true });\n`);
  writeFileSync(fx.bundle, bundleText);
  fx.at(fx.bundle, 2_000);
  const home = path.join(fx.root, 'home');
  mkdirSync(home, { mode: 0o700 });
  const cache = path.join(home, '.local', 'state', 'fake', 'code-cache', 'run.cache');
  const run = () => execa(process.execPath, [fx.shim, 'run'], { reject: false, env: { HOME: home }, extendEnv: false });
  return { ...fx, cache, run };
}

t.test('a shim with codeCache: the first run writes the cache, the next uses it and leaves it', async (t) => {
  const fx = await cachedTool(
    t,
    "exports.run = async () => { process.stdout.write(`cached ${__filename.endsWith('fake.bundle.cjs')} ${typeof require}`); };\n",
  );
  const first = await fx.run();
  t.equal(first.stdout, 'cached true function', first.stderr);
  t.equal(first.exitCode, 0);
  const made = statSync(fx.cache);
  t.equal(made.mode & 0o777, 0o600);
  const second = await fx.run();
  t.equal(second.stdout, 'cached true function', second.stderr);
  t.equal(statSync(fx.cache).ino, made.ino, 'accepted: not written again');
});

t.test('a cache V8 rejects (its data garbage under a right key) only costs a compile, and is replaced', async (t) => {
  const fx = await cachedTool(t, "exports.run = async () => { process.stdout.write('ran'); };\n");
  await fx.run();
  const text = readFileSync(fx.cache);
  const header = text.subarray(0, text.indexOf(10) + 1);
  writeFileSync(fx.cache, Buffer.concat([header, Buffer.alloc(4096, 7)]), { mode: 0o600 });
  const planted = statSync(fx.cache).ino;
  const result = await fx.run();
  t.equal(result.stdout, 'ran', result.stderr);
  t.not(statSync(fx.cache).ino, planted, 'rewritten');
});

t.test('with the cache, errors name the bundle and its own line numbers; exit code as before', async (t) => {
  const fx = await cachedTool(t, "exports.run = async () => {\n  throw new Error('boom');\n};\n");
  for (const pass of ['first', 'cached']) {
    const result = await fx.run();
    t.equal(result.exitCode, 91, pass);
    t.match(result.stderr, /fake: internal error: Error: boom\n\s+at exports\.run \(.*fake\.bundle\.cjs:2:9\)/, pass);
  }
});

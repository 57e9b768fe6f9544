// The launcher's V8 code cache (lib/shared/src/code-cache.cts): used only when the file and its
// directory are the user's alone and its key fits the bundle and the command; written atomically,
// and only where every directory from the base down is the user's alone.
import t from 'tap';
import {
  chmodSync,
  chownSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { codeCacheDir, codeCacheSlot, readCodeCache, readSource, writeCodeCache, type CodeCacheSlot } from '../dist/code-cache.cjs';

const uid = process.getuid?.() ?? -1;
const root = uid === 0;
const other = 1000;
const data = Buffer.from('cached bytes');

/** A home (0700) with a bundle beside it, and the slot of command `run` for that bundle. */
function fixture(t: { teardown(fn: () => void): void }) {
  const home = mkdtempSync(path.join(tmpdir(), 'code-cache-test-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  chmodSync(home, 0o700);
  const bundle = path.join(home, 'tool.bundle.cjs');
  writeFileSync(bundle, 'exports.run = () => 1;\n');
  const dir = codeCacheDir({ HOME: home }, 'tool');
  const source = readSource(bundle);
  if (dir === undefined || source === undefined) throw new Error('fixture');
  const slot = codeCacheSlot(dir, 'run', source);
  if (slot === undefined) throw new Error('fixture');
  return { home, bundle, dir, slot, cacheDir: path.dirname(slot.file) };
}

const written = (slot: CodeCacheSlot) => {
  if (!writeCodeCache(slot, data, uid)) throw new Error('not written');
};

t.test('the directory: $XDG_STATE_HOME when absolute, else $HOME/.local/state, else none', async (t) => {
  t.same(codeCacheDir({ XDG_STATE_HOME: '/s', HOME: '/h' }, 'tool'), { base: '/s', levels: ['tool', 'code-cache'] });
  t.same(codeCacheDir({ XDG_STATE_HOME: 'rel', HOME: '/h' }, 'tool'), { base: '/h', levels: ['.local', 'state', 'tool', 'code-cache'] });
  t.equal(codeCacheDir({ HOME: 'rel' }, 'tool'), undefined);
  t.equal(codeCacheDir({}, 'tool'), undefined);
});

t.test('written once, read back; the directories made as the user alone has them', async (t) => {
  const fx = fixture(t);
  t.equal(readCodeCache(fx.slot, uid), undefined, 'nothing yet');
  written(fx.slot);
  t.same(readCodeCache(fx.slot, uid), data);
  t.equal(statSync(fx.slot.file).mode & 0o777, 0o600);
  t.equal(statSync(fx.cacheDir).mode & 0o777, 0o700);
  t.same(readFileSync(fx.slot.file).subarray(0, fx.slot.key.length).toString(), fx.slot.key, 'the key heads the file');
});

t.test('the source read inside a wrapper: one text, keyed by the file alone', async (t) => {
  const fx = fixture(t);
  const wrapped = readSource(fx.bundle, '(function () { ', '\n});')!;
  t.equal(wrapped.text, '(function () { exports.run = () => 1;\n\n});');
  t.equal(wrapped.size, statSync(fx.bundle).size, "the file's own size");
  t.equal(codeCacheSlot(fx.dir, 'run', wrapped)?.key, fx.slot.key, 'the same key as the bare text');
  writeFileSync(fx.bundle, "exports.s = 'é';\n");
  t.equal(readSource(fx.bundle, '{', '}')?.text, "{exports.s = 'é';\n}", 'UTF-8 decoded');
});

t.test('a key that does not fit is no cache: another command, another bundle', async (t) => {
  const fx = fixture(t);
  written(fx.slot);
  const source = readSource(fx.bundle)!;
  t.equal(codeCacheSlot(fx.dir, '--help', source), undefined, 'no command name: no cache');
  t.equal(codeCacheSlot(fx.dir, undefined, source), undefined);
  const ps = codeCacheSlot(fx.dir, 'ps', source)!;
  t.equal(readCodeCache({ ...ps, file: fx.slot.file }, uid), undefined, "run's file under ps's key");
  writeFileSync(fx.bundle, 'exports.run = () => 22;\n'); // rebuilt: size and mtime move
  const rebuilt = codeCacheSlot(fx.dir, 'run', readSource(fx.bundle)!)!;
  t.equal(rebuilt.file, fx.slot.file);
  t.equal(readCodeCache(rebuilt, uid), undefined, "the old bundle's cache");
});

t.test('a cache file anyone else can write is refused', async (t) => {
  for (const mode of [0o620, 0o602, 0o666]) {
    const fx = fixture(t);
    written(fx.slot);
    chmodSync(fx.slot.file, mode);
    t.equal(readCodeCache(fx.slot, uid), undefined, `mode ${mode.toString(8)}`);
  }
});

t.test('a cache directory anyone else can write is refused, for reading and writing', async (t) => {
  for (const mode of [0o770, 0o707, 0o1777]) {
    const fx = fixture(t);
    written(fx.slot);
    chmodSync(fx.cacheDir, mode);
    t.equal(readCodeCache(fx.slot, uid), undefined, `mode ${mode.toString(8)}`);
    t.equal(writeCodeCache(fx.slot, data, uid), false, `no write into mode ${mode.toString(8)}`);
  }
});

t.test('a base or a level on the way that anyone else can write: nothing is made', async (t) => {
  const fx = fixture(t);
  chmodSync(fx.home, 0o777);
  t.equal(writeCodeCache(fx.slot, data, uid), false);
  t.throws(() => statSync(path.join(fx.home, '.local')), 'nothing made under it');
  chmodSync(fx.home, 0o700);
  mkdirSync(path.join(fx.home, '.local', 'state'), { recursive: true, mode: 0o755 });
  chmodSync(path.join(fx.home, '.local', 'state'), 0o775);
  t.equal(writeCodeCache(fx.slot, data, uid), false);
  t.throws(() => statSync(path.join(fx.home, '.local', 'state', 'tool')), 'nothing made under it');
});

t.test('a symlink or a second link is refused', async (t) => {
  const fx = fixture(t);
  written(fx.slot);
  const real = path.join(fx.home, 'real.cache');
  writeFileSync(real, readFileSync(fx.slot.file), { mode: 0o600 });
  rmSync(fx.slot.file);
  symlinkSync(real, fx.slot.file);
  t.equal(readCodeCache(fx.slot, uid), undefined, 'symlinked file');
  rmSync(fx.slot.file);
  linkSync(real, fx.slot.file);
  t.equal(readCodeCache(fx.slot, uid), undefined, 'hard link');
  const fx2 = fixture(t);
  written(fx2.slot);
  const moved = `${fx2.cacheDir}.real`;
  mkdirSync(moved, { mode: 0o700 });
  writeFileSync(path.join(moved, 'run.cache'), readFileSync(fx2.slot.file), { mode: 0o600 });
  rmSync(fx2.cacheDir, { recursive: true });
  symlinkSync(moved, fx2.cacheDir);
  t.equal(readCodeCache(fx2.slot, uid), undefined, 'symlinked directory');
});

t.test("another uid's cache is refused: root never loads a user's", { skip: root ? false : 'needs root (chown)' }, async (t) => {
  const fx = fixture(t);
  written(fx.slot);
  chownSync(fx.slot.file, other, other);
  t.equal(readCodeCache(fx.slot, uid), undefined, 'file of uid 1000');
  chownSync(fx.slot.file, uid, uid);
  t.same(readCodeCache(fx.slot, uid), data, 'back to root: used');
  chownSync(fx.cacheDir, other, other);
  t.equal(readCodeCache(fx.slot, uid), undefined, 'directory of uid 1000');
  t.equal(writeCodeCache(fx.slot, data, uid), false, 'and no write into it');
  chownSync(fx.cacheDir, uid, uid);
  chownSync(fx.home, other, other); // root's launcher with a user's $HOME (sudo without -H)
  t.equal(writeCodeCache(fx.slot, data, uid), false, "no write under a user's home");
  t.same(readCodeCache(fx.slot, other), undefined, "the user does not load root's either");
});

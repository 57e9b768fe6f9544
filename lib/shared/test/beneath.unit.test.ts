// Host-side operations under a directory a session could write never follow a link in any
// component (issue 29): each claim is made on real files in a directory of the test's own, the
// expected bytes taken from the files (sha256 before and after), and each protection has its
// control: the same plant with a plain rmSync through the path deletes the target.
import t from 'tap';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clearLinkBeneath, readBeneath, removeBeneath, walkBeneath } from '../dist/beneath.js';

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const present = (p: string) => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/** A session home and a simulated host user's home holding a canary credential, in a fresh directory. */
function world(t: { teardown(fn: () => void): void }) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'beneath-test-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'homes', 's1');
  const user = path.join(base, 'user');
  mkdirSync(home, { recursive: true });
  mkdirSync(path.join(user, '.codex'), { recursive: true });
  const credential = path.join(user, '.codex', 'auth.json');
  writeFileSync(credential, `{"OPENAI_API_KEY":"canary-${path.basename(base)}"}`);
  return { base, home, user, credential };
}

t.test('a link planted at a directory component is removed as a link; the file it led to keeps its bytes', async (t) => {
  const w = world(t);
  const before = sha(w.credential);
  symlinkSync(path.join(w.user, '.codex'), path.join(w.home, '.codex'));
  const out = removeBeneath(w.home, path.join(w.home, '.codex', 'auth.json'));
  t.same(
    out,
    { removed: false, plantedLink: path.join(w.home, '.codex'), linkTarget: path.join(w.user, '.codex') },
    'the link is reported with what it pointed at',
  );
  t.notOk(present(path.join(w.home, '.codex')), 'the link is gone from the home');
  t.equal(sha(w.credential), before, "the host user's credential is byte-identical");
});

t.test("control: a plain rmSync through the same planted link deletes the host user's file", async (t) => {
  const w = world(t);
  symlinkSync(path.join(w.user, '.codex'), path.join(w.home, '.codex'));
  rmSync(path.join(w.home, '.codex', 'auth.json'), { force: true });
  t.notOk(existsSync(w.credential), 'the old scrub (rmSync of <home>/.codex/auth.json) removed the real credential');
});

t.test('a link deeper down (.config/cursor) and a link at the target itself are removed as links', async (t) => {
  const w = world(t);
  mkdirSync(path.join(w.home, '.config'));
  symlinkSync(path.join(w.user, '.codex'), path.join(w.home, '.config', 'cursor'));
  symlinkSync(w.credential, path.join(w.home, 'log'));
  const before = sha(w.credential);
  const deep = removeBeneath(w.home, path.join(w.home, '.config', 'cursor', 'auth.json'));
  t.equal(deep.plantedLink, path.join(w.home, '.config', 'cursor'));
  t.ok(lstatSync(path.join(w.home, '.config')).isDirectory(), 'the real directory above it stays');
  const last = removeBeneath(w.home, path.join(w.home, 'log'));
  t.same(
    last,
    { removed: true, plantedLink: path.join(w.home, 'log'), linkTarget: w.credential },
    'a link at the name itself: removed, and that was the target',
  );
  t.equal(sha(w.credential), before, 'the file both pointed at is byte-identical');
});

t.test('real files and trees are removed; a link inside a removed tree is unlinked, not descended', async (t) => {
  const w = world(t);
  mkdirSync(path.join(w.home, '.codex', 'sub'), { recursive: true });
  writeFileSync(path.join(w.home, '.codex', 'auth.json'), 'copy');
  symlinkSync(w.user, path.join(w.home, '.codex', 'sub', 'up'));
  const before = sha(w.credential);
  t.same(removeBeneath(w.home, path.join(w.home, '.codex', 'auth.json')), { removed: true }, 'a regular file');
  t.same(removeBeneath(w.home, path.join(w.home, '.codex')), { removed: true }, 'a directory, recursively');
  t.notOk(present(path.join(w.home, '.codex')));
  t.equal(sha(w.credential), before, 'what the inner link pointed at is byte-identical');
  t.same(removeBeneath(w.home, path.join(w.home, 'missing', 'file')), { removed: false }, 'a missing path is nothing to do');
});

t.test("a link's target that is not UTF-8 is reported without loss", async (t) => {
  const w = world(t);
  symlinkSync(Buffer.from([0x2f, 0x78, 0x9b, 0x1b]), path.join(w.home, '.codex'));
  t.equal(
    removeBeneath(w.home, path.join(w.home, '.codex', 'auth.json')).linkTarget,
    '/x\udc9b\x1b',
    'each byte that is not UTF-8 as U+DC00+byte (shared/byte-names)',
  );
});

t.test('clearLinkBeneath removes a planted link and keeps what is real', async (t) => {
  const w = world(t);
  mkdirSync(path.join(w.home, '.claude'));
  writeFileSync(path.join(w.home, '.claude', '.credentials.json'), 'real');
  t.same(clearLinkBeneath(w.home, path.join(w.home, '.claude', '.credentials.json')), { removed: false }, 'a real file is left');
  t.equal(readFileSync(path.join(w.home, '.claude', '.credentials.json'), 'utf8'), 'real');
  symlinkSync(w.user, path.join(w.home, '.codex'));
  t.equal(clearLinkBeneath(w.home, path.join(w.home, '.codex', 'auth.json')).plantedLink, path.join(w.home, '.codex'));
  t.ok(existsSync(w.credential), 'the target is untouched');
});

t.test('the walk stops at a file where a directory should be, and at a missing component', async (t) => {
  const w = world(t);
  writeFileSync(path.join(w.home, '.codex'), 'a file');
  t.same(walkBeneath(w.home, path.join(w.home, '.codex', 'auth.json')), { reached: w.home, blocked: path.join(w.home, '.codex') });
  t.same(removeBeneath(w.home, path.join(w.home, '.codex', 'auth.json')), { removed: false }, 'nothing is removed through a file');
  t.same(walkBeneath(w.home, path.join(w.home, 'a', 'b')), { reached: w.home });
});

t.test('the root must be a real directory, and the target strictly beneath it', async (t) => {
  const w = world(t);
  const linked = path.join(w.base, 'linked-home');
  symlinkSync(w.user, linked);
  t.throws(
    () => removeBeneath(linked, path.join(linked, '.codex', 'auth.json')),
    /is not a real directory/,
    'a root that is a link is refused',
  );
  t.ok(existsSync(w.credential), 'and nothing was removed through it');
  for (const outside of [w.home, path.join(w.home, '..', 'other'), w.user, '/etc/passwd']) {
    t.throws(() => removeBeneath(w.home, outside), /is not beneath/, `${outside} is refused`);
  }
  t.same(
    removeBeneath(path.join(w.base, 'none'), path.join(w.base, 'none', 'x')),
    { removed: false },
    'a root that is not there holds nothing',
  );
  writeFileSync(path.join(w.home, '..name'), 'x');
  t.same(removeBeneath(w.home, path.join(w.home, '..name')), { removed: true }, 'a name that starts with two dots is beneath');
});

t.test('readBeneath reads a regular file only: never through a link, never a FIFO or a directory', async (t) => {
  const w = world(t);
  writeFileSync(path.join(w.home, 'log'), 'line one\nline two\n');
  const read = readBeneath(w.home, path.join(w.home, 'log'), 8);
  t.equal(read.data?.toString(), 'line one', 'at most maxBytes');
  t.equal('size' in read ? read.size : undefined, 18, 'with the full size');
  symlinkSync(w.credential, path.join(w.home, 'planted'));
  t.same(readBeneath(w.home, path.join(w.home, 'planted'), 1024), { plantedLink: path.join(w.home, 'planted') }, 'a link at the name');
  symlinkSync(path.join(w.user, '.codex'), path.join(w.home, '.codex'));
  t.same(
    readBeneath(w.home, path.join(w.home, '.codex', 'auth.json'), 1024),
    { plantedLink: path.join(w.home, '.codex') },
    'a link on the way',
  );
  execFileSync('mkfifo', [path.join(w.home, 'fifo')]);
  t.same(readBeneath(w.home, path.join(w.home, 'fifo'), 1024), {}, 'a FIFO is not read (and does not hang)');
  mkdirSync(path.join(w.home, 'dir'));
  t.same(readBeneath(w.home, path.join(w.home, 'dir'), 1024), {}, 'a directory');
  t.same(readBeneath(w.home, path.join(w.home, 'missing'), 1024), {}, 'a missing file');
});

// The index parser reads what git writes (versions 2, 3 and 4, from real git: `--index-version`,
// an intent-to-add entry for v3's extended flags, v4's prefix-compressed paths) exactly as
// `git ls-files --stage` lists it, and refuses what git would not read: a wrong checksum, a file
// cut short, an entry count larger than the file, a v4 entry dropping more than the previous path.
import t from 'tap';
import { createHash } from 'node:crypto';
import { execa } from 'execa';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { parseIndex, readVarint, unsafeIndexPath } from '../../dist/return/index-file.js';
import { git } from '../fixtures/git-tree.js';

/** A repository with nested paths sharing prefixes (what v4 compresses), a symlink, an executable and a gitlink. */
async function repoWithIndex(t: Parameters<typeof tempDir>[0]): Promise<string> {
  const repo = await tempDir(t, 'index-file-');
  await git(['init', '-q', '-b', 'main'], repo);
  const lines: string[] = [];
  const add = async (mode: string, content: string, p: string) => {
    writeFileSync(path.join(repo, 'scratch'), content);
    const oid = (await git(['hash-object', '-w', 'scratch'], repo)).stdout.trim();
    lines.push(`${mode} ${oid}\t${p}`);
  };
  await add('100644', 'a\n', 'README');
  await add('100755', 'b\n', 'bin/run');
  await add('120000', 'target', 'docs/link');
  for (let i = 0; i < 12; i += 1) await add('100644', `${i}\n`, `src/deep/module-${String(i).padStart(2, '0')}/index.ts`);
  await add('100644', 'ü\n', 'naïve/ünïcode.txt');
  lines.push(`160000 ${'1'.repeat(40)}\tvendor/sub`);
  await execa('git', ['update-index', '--index-info'], { cwd: repo, input: `${lines.join('\n')}\n` });
  return repo;
}

async function lsStage(repo: string): Promise<{ mode: string; oid: string; stage: number; path: string }[]> {
  const out = (await git(['ls-files', '--stage', '-z'], repo)).stdout;
  return out
    .split('\0')
    .filter(Boolean)
    .map((l) => {
      const m = /^(\d{6}) ([0-9a-f]+) (\d)\t([\s\S]*)$/.exec(l)!;
      return { mode: m[1]!, oid: m[2]!, stage: Number(m[3]), path: m[4]! };
    });
}

t.test('versions 2, 3 and 4 as real git writes them read exactly as git ls-files --stage lists them', async (t) => {
  const repo = await repoWithIndex(t);
  const indexFile = path.join(repo, '.git', 'index');
  for (const version of [2, 4]) {
    await git(['update-index', '--index-version', String(version)], repo);
    const parsed = parseIndex(readFileSync(indexFile));
    t.equal(parsed.version, version);
    t.same(parsed.entries, await lsStage(repo), `version ${version}: every entry, in order`);
  }
  // An intent-to-add entry carries an extended flag: git writes version 3 for it.
  await git(['update-index', '--index-version', '2'], repo);
  writeFileSync(path.join(repo, 'later.txt'), 'x\n');
  await git(['add', '-N', 'later.txt'], repo);
  const v3 = parseIndex(readFileSync(indexFile));
  t.equal(v3.version, 3, 'git wrote version 3');
  t.same(v3.entries, await lsStage(repo), 'version 3: the extended entry read too');
  // A cache tree (TREE) after a write-tree: extensions are walked, not mistaken for entries.
  await git(['rm', '-q', '--cached', 'later.txt'], repo);
  await git(['write-tree'], repo);
  t.ok(parseIndex(readFileSync(indexFile)).extensions.includes('TREE'), 'the TREE extension is listed');
});

/** `data` with its trailing SHA-1 made right again. */
function resum(data: Buffer): Buffer {
  const out = Buffer.from(data);
  createHash('sha1')
    .update(out.subarray(0, out.length - 20))
    .digest()
    .copy(out, out.length - 20);
  return out;
}

t.test('what git would not read is refused with why', async (t) => {
  const repo = await repoWithIndex(t);
  await git(['update-index', '--index-version', '4'], repo);
  const good = readFileSync(path.join(repo, '.git', 'index'));
  const cases: [string, Buffer, RegExp][] = [];
  const flipped = Buffer.from(good);
  flipped[40] = flipped[40]! ^ 1;
  cases.push(['a byte changed, the checksum left', flipped, /checksum does not match/]);
  // Cut after room for the smallest entries the count needs (63 bytes each), short of the real ones.
  const count = good.readUInt32BE(8);
  cases.push([
    'cut short (checksum made right)',
    resum(Buffer.concat([good.subarray(0, 12 + count * 63), Buffer.alloc(20)])),
    /ends inside an entry|a path has no end/,
  ]);
  const lying = Buffer.from(good);
  lying.writeUInt32BE(1_000_000, 8);
  cases.push(['an entry count the file cannot hold', resum(lying), /claims 1000000 entries/]);
  const v9 = Buffer.from(good);
  v9.writeUInt32BE(9, 4);
  cases.push(['version 9', resum(v9), /version 9/]);
  const notDirc = Buffer.from(good);
  notDirc.write('DIRX', 0, 'latin1');
  cases.push(['no DIRC', resum(notDirc), /DIRC/]);
  // The second entry (v4) says to drop 200 bytes of a previous path that has 6.
  const entryEnd = good.indexOf(0, 12 + 62 + 1);
  const dropping = Buffer.from(good);
  dropping[entryEnd + 1 + 62] = 0x7f;
  cases.push(['a v4 entry dropping more than the previous path has', resum(dropping), /drops more of the previous path|says its path has/]);
  for (const [name, data, why] of cases) t.throws(() => parseIndex(data), { name: 'IndexFormatError', message: why }, name);
  t.equal(cases.length, 6, 'every case ran');
});

t.test("git's varint: one byte, and the continuation adding one per byte", async (t) => {
  t.same(readVarint(Buffer.from([0x05]), 0), { value: 5, next: 1 });
  t.same(readVarint(Buffer.from([0x80, 0x00]), 0), { value: 128, next: 2 });
  t.same(readVarint(Buffer.from([0x81, 0x7f]), 0), { value: 383, next: 2 });
  t.throws(() => readVarint(Buffer.from([0x80]), 0), { name: 'IndexFormatError' }, 'cut short');
});

t.test('the paths git would not check out (verify_path with protectNTFS)', async (t) => {
  const unsafe = [
    '../x',
    'a/../b',
    '.git/hooks/x',
    'a/.GIT/config',
    '.git./x',
    '.git  /x',
    'GIT~1/x',
    'a\\..\\b',
    '/etc/x',
    'a//b',
    './a',
    '',
    'dir/',
  ];
  const safe = ['a', 'a/b.c', '.gitignore', 'x/.github/y', '..a', 'a..', '.gitmodules', 'git~2/x', 'naïve/ü'];
  for (const p of unsafe) t.ok(unsafeIndexPath(p), JSON.stringify(p));
  for (const p of safe) t.notOk(unsafeIndexPath(p), JSON.stringify(p));
});

// The audit's walks read names as the kernel has them (issue 29): a nested repository or a ref
// named with bytes that are not UTF-8 is found and reported (before, node's decoding turned the
// name into U+FFFD and the walk joined a path that reaches nothing: the control shows that
// path is not there), a FIFO where a ref should be is skipped without waiting for a writer,
// and a ref file is read only as far as a ref goes. Real files in a directory of the test's own.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { branchOf, diffNestedGit, droppedRefs, parsePackedRefs, readStoreRefs, scanNestedGit } from '../../dist/index.js';

const join = (...parts: Array<string | Buffer>) =>
  Buffer.concat(parts.map((p, i) => Buffer.concat([i > 0 ? Buffer.from('/') : Buffer.alloc(0), Buffer.from(p)])));
const oid = 'a'.repeat(40);

t.test('a nested repository in a directory named with bytes that are not UTF-8 is found, named without loss', async (t) => {
  const ws = await tempDir(t, 'audit-bytes-ws-');
  const before = await scanNestedGit(ws);
  const raw = Buffer.from([0x72, 0x61, 0x77, 0x2d, 0x9b, 0x2d, 0xff]);
  mkdirSync(join(ws, raw, '.git', 'hooks'), { recursive: true });
  writeFileSync(join(ws, raw, '.git', 'config'), '[core]\n\tfsmonitor = touch /tmp/x\n');
  const decoded = readdirSync(ws)[0]!;
  t.notOk(existsSync(path.join(ws, decoded, '.git')), 'control: the name as node decodes it by default reaches nothing');
  const changes = diffNestedGit(before, await scanNestedGit(ws));
  t.same(
    changes,
    [{ path: 'raw-\udc9b-\udcff/.git', change: 'added', type: 'gitdir' }],
    'reported, each byte that is not UTF-8 kept as U+DC00+byte',
  );
});

t.test(
  "a ref named with bytes that are not UTF-8 is read from a session's store and counted; a FIFO at a ref is skipped without waiting",
  async (t) => {
    const common = await tempDir(t, 'audit-bytes-git-');
    mkdirSync(path.join(common, 'refs', 'heads'), { recursive: true });
    writeFileSync(path.join(common, 'refs', 'heads', 'main'), `${oid}\n`);
    writeFileSync(join(common, 'refs', 'heads', Buffer.from([0x62, 0xff, 0x1b])), `${oid}\n`);
    execFileSync('mkfifo', [path.join(common, 'refs', 'heads', 'fifo')]);
    // Control: a plain read waits for a writer (released here by opening the FIFO to write).
    const fifo = path.join(common, 'refs', 'heads', 'fifo');
    const plain = readFile(fifo).then(() => 'read');
    t.equal(
      await Promise.race([plain, sleep(1000, 'still waiting')]),
      'still waiting',
      'control: a plain read of the FIFO is still waiting after 1 s',
    );
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    await plain;
    const started = Date.now();
    const snap = readStoreRefs(common);
    t.ok(Date.now() - started < 5000, 'the read returns at once');
    t.same(
      Object.fromEntries(snap.refs),
      { 'refs/heads/main': oid, 'refs/heads/b\udcff\x1b': oid, 'refs/heads/fifo': 'invalid: a FIFO' },
      'the FIFO is named as what it is, never opened; the other name is kept byte for byte',
    );
  },
);

t.test('a FIFO at packed-refs leaves the refs it held unknown, not reported deleted', async (t) => {
  const common = await tempDir(t, 'audit-packed-fifo-');
  mkdirSync(path.join(common, 'refs', 'heads'), { recursive: true });
  execFileSync('mkfifo', [path.join(common, 'packed-refs')]);
  const before = new Map([
    ['refs/heads/main', oid],
    ['refs/tags/v1', oid],
  ]);
  const started = Date.now();
  const after = readStoreRefs(common);
  t.ok(Date.now() - started < 5000, 'the read returns at once');
  t.equal(after.packedUnread, 'a FIFO');
  const dropped = droppedRefs(before, after.refs, null, after.packedUnread);
  t.same(
    dropped.named.map((r) => r.new),
    ['unknown: packed-refs is a FIFO', 'unknown: packed-refs is a FIFO'],
    'main and v1: unknown, not deleted',
  );
  t.same(
    droppedRefs(before, new Map(), null).named.map((r) => r.new),
    [null, null],
    'the control: with packed-refs read and empty, they are deleted',
  );
});

t.test('a ref file of 8 MiB is read only as far as a ref goes', async (t) => {
  const common = await tempDir(t, 'audit-bytes-big-');
  mkdirSync(path.join(common, 'refs', 'heads'), { recursive: true });
  writeFileSync(path.join(common, 'refs', 'heads', 'big'), Buffer.alloc(8 << 20, 0x78));
  t.match(readStoreRefs(common).refs.get('refs/heads/big'), /^invalid/, 'an invalid ref, from its first bytes');
});

t.test(
  'a ref named in UTF-8 (a Cyrillic а in mаin) reads the same from packed-refs, a loose file and HEAD: not moved, and not mÐ°in',
  async (t) => {
    const common = await tempDir(t, 'audit-utf8-refs-');
    const name = 'refs/heads/m\u0430in';
    mkdirSync(path.join(common, 'refs', 'heads'), { recursive: true });
    writeFileSync(path.join(common, 'packed-refs'), `# pack-refs with: sorted \n${oid} ${name}\n`);
    const before = readStoreRefs(common).refs;
    t.same([...before.keys()], [name], 'packed-refs: the name as written, not its bytes read as Latin-1');
    const asLatin1 = new Map<string, string>();
    parsePackedRefs(readFileSync(path.join(common, 'packed-refs'), 'latin1'), asLatin1);
    t.same([...asLatin1.keys()], ['refs/heads/m\u00d0\u00b0in'], 'control: read byte by byte (as Latin-1, as before) it is mÐ°in');
    writeFileSync(path.join(common, name), `${oid}\n`);
    writeFileSync(path.join(common, 'refs', 'heads', 'link-target'), `ref: ${name}\n`);
    const after = readStoreRefs(common).refs;
    t.same(droppedRefs(before, new Map([...after].filter(([n]) => n === name)), null).named, [], 'the same ref loose: nothing moved');
    t.equal(after.get('refs/heads/link-target'), `ref: ${name}`, 'a symbolic ref names it as it is');
    t.equal(branchOf(Buffer.from(`ref: ${name}\n`)), name, 'HEAD names the same branch');
  },
);

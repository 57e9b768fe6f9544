// A refused import leaves nothing in the host repository: 20 MB the session wrote on top of its
// branch, which git's checks refuse (a .gitmodules, a tree entry named .git), leave under 1 MB
// and no temporary pack or quarantine behind. Control: a plain checked fetch of the same leaves
// its pack. (A failed import that keeps the store: failed-import-keeps-the-store.test.ts.)
import t, { type Test } from 'tap';
import { execa } from 'execa';
import { tempDir } from '@agent-sandbox/testkit';
import { finishGitStore } from '../../dist/index.js';
import { git } from '../fixtures/git-tree.js';
import { makeReader, setReaderRef } from '../../dist/store/store-reader.js';
import { branch, session, type Session } from '../fixtures/store-session.js';

/** Bytes under a git dir's objects, and the temporary packs git left there. */
async function objectsOf(gitDir: string): Promise<{ bytes: number; tmpPacks: string[] }> {
  const bytes = Number((await execa('du', ['-sb', `${gitDir}/objects`])).stdout.split('\t')[0]);
  const tmpPacks = (await execa('find', [`${gitDir}/objects`, '-name', 'tmp_*'])).stdout.split('\n').filter(Boolean);
  return { bytes, tmpPacks };
}

/**
 * 20 MB of random data on the session's branch, in a commit newer than `plant` (a pack is written
 * newest first, so the 20 MB arrive before the object that fails the checks). Returns the tips.
 */
async function bigOnTopOf(s: Session, plant: string): Promise<{ blob: string; bad: string }> {
  const big = Buffer.alloc(20 << 20);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
  const blob = (
    await execa('git', ['hash-object', '-w', '--stdin'], {
      input: big,
      env: {
        GIT_DIR: s.tree.common,
        GIT_OBJECT_DIRECTORY: `${s.store.dir}/common/objects`,
        GIT_ALTERNATE_OBJECT_DIRECTORIES: `${s.tree.common}/objects`,
        PATH: process.env['PATH'],
      },
      extendEnv: false,
    })
  ).stdout.trim();
  const older = await s.write(['commit-tree', plant, '-p', s.start, '-m', 'refused by git']);
  const bad = await s.write(['commit-tree', await s.write(['mktree'], `100644 blob ${blob}\tbig\n`), '-p', older, '-m', 'big']);
  await s.moveBranch(bad);
  return { blob, bad };
}

/** The import of `bad` refused, and what it left in the host repository: under 1 MB, no temporary pack, no quarantine. */
async function refusedLeavesNothing(t: Test, s: Session, blob: string, bad: string): Promise<void> {
  const before = await objectsOf(s.tree.common);
  const report = finishGitStore(s.store.dir);
  t.match(report, { outcome: 'failed', to: bad });
  const after = await objectsOf(s.tree.common);
  t.ok(
    after.bytes - before.bytes < 1 << 20,
    `the host's objects grew by ${after.bytes - before.bytes} bytes (${before.bytes} before, du -sb)`,
  );
  t.same(after.tmpPacks, [], 'no temporary pack in the host repository');
  t.same((await execa('find', [s.tree.common, '-maxdepth', '1', '-name', 'agent-sandbox-import-*'])).stdout, '', 'the quarantine is gone');
  t.equal((await git(['cat-file', '-e', blob], s.tree.main, false)).exitCode, 1, 'the blob did not reach the host repository');
}

t.test(
  'a refused import of 20 MB (a .gitmodules git refuses) leaves under 1 MB in the host repository and no temporary pack (control: a plain checked fetch leaves its pack)',
  async (t) => {
    const s = await session(t, 'quarantine');
    // A .gitmodules git refuses: an option for a url.
    const modules = await s.write(
      ['hash-object', '-w', '--stdin'],
      '[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwned\n',
    );
    const { blob, bad } = await bigOnTopOf(s, await s.write(['mktree'], `100644 blob ${modules}\t.gitmodules\n`));

    // The control: the same branch fetched with the same checks straight into a repository.
    const control = await tempDir(t, 'mount-plan-quarantine-control-');
    await execa('git', ['init', '-q', '--bare', `${control}/repo`]);
    makeReader(`${control}/reader`, `${s.store.dir}/common`, `${s.tree.common}/objects`); // the store read as the import reads it
    setReaderRef(`${control}/reader`, `refs/heads/${branch}`, bad);
    const plain = await execa(
      'git',
      [
        '-C',
        `${control}/repo`,
        '-c',
        'transfer.fsckObjects=true',
        '-c',
        'fetch.unpackLimit=1',
        '-c',
        'protocol.file.allow=always',
        'fetch',
        '-q',
        `${control}/reader`,
        `+refs/heads/${branch}:refs/x`,
      ],
      { reject: false },
    );
    t.not(plain.exitCode, 0, "git's checks refuse the branch");
    const left = await objectsOf(`${control}/repo`);
    t.ok(
      left.tmpPacks.length > 0 && left.bytes > 20e6,
      `without a quarantine the refused fetch leaves ${left.bytes} bytes and ${left.tmpPacks.length} temporary pack(s) (git said: ${plain.stderr.slice(-300)})`,
    );

    await refusedLeavesNothing(t, s, blob, bad);
  },
);

t.test('a refused import of 20 MB (a tree entry .git) leaves under 1 MB in the host repository and no temporary pack', async (t) => {
  const s = await session(t, 'dotgit');
  const hook = await s.write(['hash-object', '-w', '--stdin'], '#!/bin/sh\ntouch /tmp/pwned\n');
  const hooks = await s.write(['mktree'], `100755 blob ${hook}\tpost-checkout\n`);
  const dotGit = await s.write(['mktree'], `040000 tree ${hooks}\thooks\n`);
  const { blob, bad } = await bigOnTopOf(s, await s.write(['mktree'], `040000 tree ${dotGit}\t.git\n`));
  await refusedLeavesNothing(t, s, blob, bad);
});

// A failed import must not lose commits, and a refused one leaves nothing in the host
// repository. When the cause is on the host's side (here: a lock held on the branch, the way a
// concurrent git or a crashed one leaves it), the store is kept with its commits, kept.json counts the attempts, and the next finish, once
// the cause is gone, brings the branch home and removes the store. When the cause is the
// session's own content (its branch names objects it does not have, or an object fails git's
// checks), the store goes and the report says why: those commits cannot come home anyway.
// The session's commits are written into the store by the host's git (objects into the store,
// the host's borrowed), as a session would; the host's own git says what happened.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { finishGitStore, maxImportRetries, planMounts, prepareGitStore } from '../../dist/index.js';
import { git, worktreeSession } from '../fixtures/git-tree.js';
import { makeReader, setReaderRef } from '../../dist/store/store-reader.js';

const branch = 'session-s1';
const side = 'refs/agent-sandbox/returned/s1';

async function session(t: Teardown, label: string) {
  const tree = await worktreeSession(await tempDir(t, `mount-plan-kept-${label}-`));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = plan.gitStore!;
  prepareGitStore(store, 's1');
  t.teardown(async () => {
    await rm(`${tree.common}/${side}.lock`, { force: true });
    await rm(`${tree.common}/refs/heads/${branch}.lock`, { force: true });
    finishGitStore(store.dir);
  });
  const rev = async (ref: string) => (await git(['rev-parse', '--verify', '-q', ref], tree.main, false)).stdout.trim() || null;
  const start = (await rev(branch))!;
  /** An object written into the store, as the session's git would (the host's objects borrowed). */
  const write = async (args: string[], input?: string) => {
    const env = { GIT_DIR: tree.common, GIT_OBJECT_DIRECTORY: `${store.dir}/common/objects`, GIT_ALTERNATE_OBJECT_DIRECTORIES: `${tree.common}/objects`, GIT_AUTHOR_NAME: 'agent', GIT_AUTHOR_EMAIL: 'agent@example.invalid', GIT_COMMITTER_NAME: 'agent', GIT_COMMITTER_EMAIL: 'agent@example.invalid', PATH: process.env['PATH'] };
    return (await execa('git', args, { env, extendEnv: false, ...(input !== undefined ? { input } : {}) })).stdout.trim();
  };
  /** The session's branch in its store moved to `tip`. */
  const moveBranch = (tip: string) => writeFile(`${store.dir}/common/refs/heads/${branch}`, `${tip}\n`);
  const commit = async (message: string) => {
    const tip = await write(['commit-tree', `${start}^{tree}`, '-p', start, '-m', message]);
    await moveBranch(tip);
    return tip;
  };
  /** A lock file on the branch here, as a git that holds (or crashed holding) it leaves one. */
  const lockSide = async () => {
    await mkdir(`${tree.common}/refs/heads`, { recursive: true });
    await writeFile(`${tree.common}/refs/heads/${branch}.lock`, '');
  };
  const fsck = async () => (await git(['fsck', '--full', '--no-progress'], tree.main, false)).exitCode;
  return { tree, store, rev, start, write, moveBranch, commit, lockSide, fsck };
}

t.test("a waiting ref an earlier session holds is never overwritten, nor one another git has locked: the commits wait at the next free name", async (t) => {
  const s = await session(t, 'waiting');
  // An earlier session's commits, waiting at the first name (the host's git wrote them there).
  const earlier = (await git(['commit-tree', `${s.start}^{tree}`, '-p', s.start, '-m', 'an earlier session'], s.tree.main)).stdout.trim();
  await git(['update-ref', side, earlier], s.tree.main);
  // The second name is locked, as a git that holds (or crashed holding) it leaves it.
  await writeFile(`${s.tree.common}/${side}+2.lock`, '');
  const rewritten = await s.write(['commit-tree', `${s.start}^{tree}`, '-m', 'rewritten, no parent']);
  await s.moveBranch(rewritten);
  const report = finishGitStore(s.store.dir);
  t.match(report, { outcome: 'side-ref', sideRef: `${side}+3`, to: rewritten });
  t.equal(await s.rev(side), earlier, "the earlier session's commits are still referenced");
  t.equal(await s.rev(`${side}+3`), rewritten, "this session's commits wait at a ref of their own");
  t.equal(await s.rev(branch), s.start, 'the branch here did not move');
  t.notOk(existsSync(s.store.dir), 'the store is gone: the commits are safe in the repository');
  await rm(`${s.tree.common}/${side}+2.lock`);
  t.equal(await s.fsck(), 0, 'git fsck --full passes');
});

t.test('a lock held on the branch here stops the advance: the commits wait at the side ref, the store is kept, and the retry advances the branch', async (t) => {
  const s = await session(t, 'advance');
  const tip = await s.commit('honest');
  await writeFile(`${s.tree.common}/refs/heads/${branch}.lock`, '');
  const first = finishGitStore(s.store.dir);
  t.match(first, { outcome: 'side-ref', sideRef: side, to: tip, storeKept: { attempts: 1, retried: true } });
  t.equal(await s.rev(side), tip, 'the commits are already safe at the side ref');
  t.ok(existsSync(s.store.dir), 'the store is kept');
  await rm(`${s.tree.common}/refs/heads/${branch}.lock`);
  t.match(finishGitStore(s.store.dir), { outcome: 'fast-forward', to: tip });
  t.equal(await s.rev(branch), tip, 'the branch advanced');
  t.equal(await s.rev(side), null, 'the side ref went with it');
  t.notOk(existsSync(s.store.dir));
});

t.test(`after ${maxImportRetries} failed retries the store says it waits for the user, and it still imports once the cause is gone`, async (t) => {
  const s = await session(t, 'retries');
  const tip = await s.commit('honest');
  await s.lockSide();
  const attempts = [];
  for (let i = 0; i <= maxImportRetries + 1; i += 1) attempts.push(finishGitStore(s.store.dir).storeKept);
  t.same(attempts.map((k) => [k?.attempts, k?.retried]), [[1, true], [2, true], [3, true], [4, false], [5, false]]);
  await rm(`${s.tree.common}/refs/heads/${branch}.lock`);
  t.match(finishGitStore(s.store.dir), { outcome: 'fast-forward', to: tip });
  t.equal(await s.rev(side), null, 'the retries parked the commits once, and that ref went with the advance');
  t.equal(await s.rev(`${side}+2`), null);
  t.notOk(existsSync(s.store.dir));
});

t.test("the session's own content decides even with a host cause present: a branch naming an object the store lacks discards the store, with why", async (t) => {
  const s = await session(t, 'missing');
  await s.moveBranch('1'.repeat(40));
  await s.lockSide();
  const report = finishGitStore(s.store.dir);
  t.match(report, { outcome: 'failed', to: '1'.repeat(40) });
  t.match(report.message, /an object its store does not have/);
  t.notOk(report.storeKept, 'not kept');
  t.notOk(existsSync(s.store.dir), 'the store is gone');
  t.equal(await s.rev(branch), s.start);
});

t.test('a commit whose parent the session deleted from its store: discarded, with why', async (t) => {
  const s = await session(t, 'parent');
  const parent = await s.commit('first');
  const child = await s.write(['commit-tree', `${s.start}^{tree}`, '-p', parent, '-m', 'second']);
  await s.moveBranch(child);
  await rm(`${s.store.dir}/common/objects/${parent.slice(0, 2)}/${parent.slice(2)}`);
  const report = finishGitStore(s.store.dir);
  t.match(report, { outcome: 'failed', to: child });
  t.match(report.message, /reaches objects its store does not have/);
  t.notOk(report.storeKept);
  t.notOk(existsSync(s.store.dir));
  t.equal(await s.fsck(), 0, 'git fsck --full passes: nothing of it was imported');
});

t.test("an object git's checks refuse (transfer.fsckObjects): discarded, with why", async (t) => {
  const s = await session(t, 'invalid');
  const tree = (await git(['rev-parse', `${s.start}^{tree}`], s.tree.main)).stdout.trim();
  const bad = await s.write(['hash-object', '-t', 'commit', '-w', '--literally', '--stdin'], `tree ${tree}\nparent ${s.start}\nauthor agent <agent@example.invalid 1 +0000\ncommitter agent <agent@example.invalid> 1 +0000\n\nbad\n`);
  await s.moveBranch(bad);
  const report = finishGitStore(s.store.dir);
  t.match(report, { outcome: 'failed', to: bad });
  t.match(report.message, /fails git's checks/);
  t.notOk(report.storeKept);
  t.notOk(existsSync(s.store.dir));
  t.equal((await git(['cat-file', '-e', bad], s.tree.main, false)).exitCode, 1, 'the object did not reach the host repository');
  t.equal(await s.fsck(), 0, 'git fsck --full passes');
});

/** Bytes under a git dir's objects, and the temporary packs git left there. */
async function objectsOf(gitDir: string): Promise<{ bytes: number; tmpPacks: string[] }> {
  const bytes = Number((await execa('du', ['-sb', `${gitDir}/objects`])).stdout.split('\t')[0]);
  const tmpPacks = (await execa('find', [`${gitDir}/objects`, '-name', 'tmp_*'])).stdout.split('\n').filter(Boolean);
  return { bytes, tmpPacks };
}

type Session = Awaited<ReturnType<typeof session>>;

/**
 * 20 MB of random data on the session's branch, in a commit newer than `plant` (a pack is written
 * newest first, so the 20 MB arrive before the object that fails the checks). Returns the tips.
 */
async function bigOnTopOf(s: Session, plant: string): Promise<{ blob: string; bad: string }> {
  const big = Buffer.alloc(20 << 20);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
  const blob = (await execa('git', ['hash-object', '-w', '--stdin'], { input: big, env: { GIT_DIR: s.tree.common, GIT_OBJECT_DIRECTORY: `${s.store.dir}/common/objects`, GIT_ALTERNATE_OBJECT_DIRECTORIES: `${s.tree.common}/objects`, PATH: process.env['PATH'] }, extendEnv: false })).stdout.trim();
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
  t.ok(after.bytes - before.bytes < 1 << 20, `the host's objects grew by ${after.bytes - before.bytes} bytes (${before.bytes} before, du -sb)`);
  t.same(after.tmpPacks, [], 'no temporary pack in the host repository');
  t.same((await execa('find', [s.tree.common, '-maxdepth', '1', '-name', 'agent-sandbox-import-*'])).stdout, '', 'the quarantine is gone');
  t.equal((await git(['cat-file', '-e', blob], s.tree.main, false)).exitCode, 1, 'the blob did not reach the host repository');
}

t.test('a refused import of 20 MB (a .gitmodules git refuses) leaves under 1 MB in the host repository and no temporary pack (control: a plain checked fetch leaves its pack)', async (t) => {
  const s = await session(t, 'quarantine');
  // A .gitmodules git refuses: an option for a url.
  const modules = await s.write(['hash-object', '-w', '--stdin'], '[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwned\n');
  const { blob, bad } = await bigOnTopOf(s, await s.write(['mktree'], `100644 blob ${modules}\t.gitmodules\n`));

  // The control: the same branch fetched with the same checks straight into a repository.
  const control = await tempDir(t, 'mount-plan-quarantine-control-');
  await execa('git', ['init', '-q', '--bare', `${control}/repo`]);
  makeReader(`${control}/reader`, `${s.store.dir}/common`, `${s.tree.common}/objects`); // the store read as the import reads it
  setReaderRef(`${control}/reader`, `refs/heads/${branch}`, bad);
  const plain = await execa('git', ['-C', `${control}/repo`, '-c', 'transfer.fsckObjects=true', '-c', 'fetch.unpackLimit=1', '-c', 'protocol.file.allow=always', 'fetch', '-q', `${control}/reader`, `+refs/heads/${branch}:refs/x`], { reject: false });
  t.not(plain.exitCode, 0, "git's checks refuse the branch");
  const left = await objectsOf(`${control}/repo`);
  t.ok(left.tmpPacks.length > 0 && left.bytes > 20e6, `without a quarantine the refused fetch leaves ${left.bytes} bytes and ${left.tmpPacks.length} temporary pack(s) (git said: ${plain.stderr.slice(-300)})`);

  await refusedLeavesNothing(t, s, blob, bad);
});

t.test('a refused import of 20 MB (a tree entry .git) leaves under 1 MB in the host repository and no temporary pack', async (t) => {
  const s = await session(t, 'dotgit');
  const hook = await s.write(['hash-object', '-w', '--stdin'], '#!/bin/sh\ntouch /tmp/pwned\n');
  const hooks = await s.write(['mktree'], `100755 blob ${hook}\tpost-checkout\n`);
  const dotGit = await s.write(['mktree'], `040000 tree ${hooks}\thooks\n`);
  const { blob, bad } = await bigOnTopOf(s, await s.write(['mktree'], `040000 tree ${dotGit}\t.git\n`));
  await refusedLeavesNothing(t, s, blob, bad);
});

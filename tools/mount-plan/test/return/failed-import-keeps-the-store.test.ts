// A failed import must not lose commits. When the cause is on the host's side (here: a lock
// held on the side ref or on the branch, the way a concurrent git or a crashed one leaves it),
// the store is kept with its commits, kept.json counts the attempts, and the next finish, once
// the cause is gone, brings the branch home and removes the store. When the cause is the
// session's own content (its branch names objects it does not have, or an object fails git's
// checks), the store goes and the report says why: those commits cannot come home anyway.
// The session's commits are written into the store by the host's git (objects into the store,
// the host's borrowed), as a session would; the host's own git says what happened.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { finishGitStore, maxImportRetries, planMounts, prepareGitStore } from '../../dist/index.js';
import { git, worktreeSession } from '../fixtures/git-tree.js';

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
  /** A lock file on the side ref here, as a git that holds (or crashed holding) it leaves one. */
  const lockSide = async () => {
    await mkdir(`${tree.common}/refs/agent-sandbox/returned`, { recursive: true });
    await writeFile(`${tree.common}/${side}.lock`, '');
  };
  const fsck = async () => (await git(['fsck', '--full', '--no-progress'], tree.main, false)).exitCode;
  return { tree, store, rev, start, write, moveBranch, commit, lockSide, fsck };
}

t.test('a lock held on the side ref here fails the fetch: the store is kept, then the next finish brings the commit home', async (t) => {
  const s = await session(t, 'fetch');
  const tip = await s.commit('honest');
  await s.lockSide();
  const first = finishGitStore(s.store.dir);
  t.match(first, { outcome: 'failed', from: s.start, to: tip, storeKept: { path: s.store.dir, attempts: 1, retried: true } });
  t.match(first.storeKept!.why, /lock/, 'the ledger says what failed');
  t.ok(existsSync(`${s.store.dir}/common/refs/heads/${branch}`), 'the store is still there, with the commit');
  t.match(JSON.parse(await readFile(`${s.store.dir}/kept.json`, 'utf8')), { version: 1, attempts: 1 });
  t.equal(await s.rev(branch), s.start, 'the branch here did not move');
  await rm(`${s.tree.common}/${side}.lock`);
  const second = finishGitStore(s.store.dir, { by: 'retry' });
  t.match(second, { outcome: 'fast-forward', from: s.start, to: tip, by: 'retry' });
  t.notOk(second.storeKept, 'nothing kept any more');
  t.equal(await s.rev(branch), tip, 'the commit is on the branch');
  t.equal(await s.rev(side), null, 'no side ref left');
  t.notOk(existsSync(s.store.dir), 'the store is gone');
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
  await rm(`${s.tree.common}/${side}.lock`);
  t.match(finishGitStore(s.store.dir), { outcome: 'fast-forward', to: tip });
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

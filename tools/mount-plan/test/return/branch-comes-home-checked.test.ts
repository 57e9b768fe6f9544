// What comes home from a session's store is its branch, through a checked fetch, and only as a
// fast-forward of what the branch is here now. A rewritten branch, or one the host moved during
// the session, waits at refs/agent-sandbox/returned/<id>; a detached HEAD brings nothing; a store
// whose objects the session broke brings nothing and says so; an unborn branch is created.
// Expected values come from the host's own git (rev-parse, fsck), never from the code under test.
import t from 'tap';
import { mkdir, readdir } from 'node:fs/promises';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { planMounts } from '../../dist/index.js';
import { git, image, prepareStore, rootOwner, runInContainer, worktreeSession } from '../fixtures/git-tree.js';

const root0 = { user: '0:0' };
const side = 'refs/agent-sandbox/returned/s1';

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

async function session(t: Teardown, label: string) {
  const tree = await worktreeSession(await tempDir(t, `mount-plan-home-${label}-`));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = prepareStore(t, plan, rootOwner);
  const rev = async (ref: string) => (await git(['rev-parse', '--verify', '-q', ref], tree.main, false)).stdout.trim() || null;
  return { tree, plan, store, rev, start: await rev('session-s1') };
}

t.test('a rewritten branch is not applied: it waits at the side ref, and the branch here stays', async (t) => {
  const { tree, plan, store, rev, start } = await session(t, 'rewrite');
  const run = await runInContainer(
    t,
    plan,
    'git commit -q --allow-empty -m a && git reset -q --hard HEAD~1 && git commit -q --allow-empty --amend -m rewritten && git rev-parse HEAD',
    root0,
  );
  t.equal(run.exitCode, 0, run.stderr);
  const report = store.finish();
  t.match(report, { outcome: 'side-ref', sideRef: side, from: start, to: run.stdout.trim() });
  t.match(report.message, /not a fast-forward/);
  t.equal(await rev('session-s1'), start, 'the branch here did not move');
  t.equal(await rev(side), run.stdout.trim(), 'the rewritten history waits at the side ref');
  t.equal((await git(['fsck', '--full', '--no-progress'], tree.main, false)).exitCode, 0, 'git fsck --full passes');
});

t.test("a branch the host moved during the session is not overwritten: the session's commits wait at the side ref", async (t) => {
  const { tree, plan, store, rev } = await session(t, 'moved');
  const run = await runInContainer(t, plan, 'git commit -q --allow-empty -m "from the session" && git rev-parse HEAD', root0);
  t.equal(run.exitCode, 0, run.stderr);
  await git(['commit', '-q', '--allow-empty', '-m', 'from the host meanwhile'], tree.workspace);
  const hostTip = await rev('session-s1');
  const report = store.finish();
  t.match(report, { outcome: 'side-ref', from: hostTip, to: run.stdout.trim() });
  t.equal(await rev('session-s1'), hostTip, "the host's commit stays the branch's tip");
});

t.test('a detached HEAD at start has no branch: nothing comes home', async (t) => {
  const tree = await worktreeSession(await tempDir(t, 'mount-plan-home-detached-'));
  await git(['checkout', '-q', '--detach'], tree.workspace);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = prepareStore(t, plan, rootOwner);
  const refsBefore = (await git(['for-each-ref'], tree.main)).stdout;
  const run = await runInContainer(t, plan, 'git commit -q --allow-empty -m detached && git checkout -q -b made-inside', root0);
  t.equal(run.exitCode, 0, run.stderr);
  const report = store.finish();
  t.match(report, { branch: null, outcome: 'none' });
  t.equal((await git(['for-each-ref'], tree.main)).stdout, refsBefore, 'no ref here changed');
});

t.test('a store whose objects the session deleted brings nothing home and says why; the host is intact', async (t) => {
  const { tree, plan, store, rev, start } = await session(t, 'wiped');
  const run = await runInContainer(
    t,
    plan,
    'git commit -q --allow-empty -m lost && find "$(git rev-parse --git-common-dir)/objects" -type f -delete; find /sandbox/git/live/objects -type f -delete 2>&1 | tail -1',
    root0,
  );
  t.match(run.stdout + run.stderr, /Read-only file system/, "the host's objects are read-only inside");
  const report = store.finish();
  t.match(report, { outcome: 'failed', from: start });
  t.match(report.message, /not brought home/);
  t.equal(await rev('session-s1'), start, 'the branch here did not move');
  t.equal(await rev(side), null, 'no side ref either');
  t.equal((await git(['fsck', '--full', '--no-progress'], tree.main, false)).exitCode, 0, 'git fsck --full passes');
  t.same(await readdir(`${tree.root}/git-stores`), [], 'the store is removed all the same');
});

t.test('an unborn branch (a repository without a commit) is created by the import', async (t) => {
  const base = await tempDir(t, 'mount-plan-home-unborn-');
  const ws = `${base}/root/workspaces/s1`;
  await mkdir(ws, { recursive: true });
  await git(['init', '-q', '-b', 'trunk'], ws);
  const plan = await planMounts({ workspace: ws, root: `${base}/root`, sessionId: 's1' });
  const store = prepareStore(t, plan, rootOwner);
  const run = await runInContainer(t, plan, 'echo x > x && git add x && git commit -q -m first && git rev-parse HEAD', root0);
  t.equal(run.exitCode, 0, run.stderr);
  t.match(store.finish(), {
    branch: 'refs/heads/trunk',
    outcome: 'fast-forward',
    from: null,
    to: run.stdout.trim(),
    copiedBack: ['index'],
  });
  t.equal((await git(['rev-parse', 'trunk'], ws)).stdout.trim(), run.stdout.trim());
  t.equal((await git(['status', '--porcelain'], ws)).stdout, '', 'the host sees a clean checkout');
});

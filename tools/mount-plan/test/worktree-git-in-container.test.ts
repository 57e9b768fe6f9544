// Real git in a real container: a linked worktree whose common dir sits outside
// the workspace works inside, and nothing run inside removes the host's
// registrations of other worktrees or of the session's own.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { imageExists, leakedContainers, tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { planMounts } from '../dist/index.js';
import { git, image, prepareStore, rootOwner, runInContainer, worktreeSession } from './fixtures/git-tree.js';

const root0 = { user: '0:0' }; // host test files belong to root; caps stay dropped

async function setup(t: Teardown) {
  const tree = await worktreeSession(await tempDir(t, 'mount-plan-wt-'));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const { finish } = prepareStore(t, plan, rootOwner);
  return { tree, plan, finish };
}

async function worktreeList(main: string): Promise<string> {
  return (await git(['worktree', 'list', '--porcelain'], main)).stdout;
}

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

t.test('a git commit inside the container in a linked worktree reaches the host worktree once the store is finished', async (t) => {
  const { tree, plan, finish } = await setup(t);
  t.equal(plan.git.kind, 'worktree');
  t.equal(plan.git.commonDir, tree.common, 'the common dir is outside the workspace');
  const run = await runInContainer(
    t,
    plan,
    'echo from-container > made-inside && git add made-inside && git commit -q -m "commit from inside" && git rev-parse HEAD',
    root0,
  );
  t.equal(run.exitCode, 0, `git commit inside exits 0 (${run.stderr})`);
  t.equal(
    (await git(['log', '-1', '--format=%s'], tree.workspace)).stdout,
    'initial',
    'during the session the host repository has not changed',
  );
  const report = finish();
  t.match(
    report,
    { outcome: 'fast-forward', branch: 'refs/heads/session-s1', copiedBack: ['index'] },
    'the branch came home by fast-forward, and the index with it',
  );
  const host = await git(['log', '-1', '--format=%H %s'], tree.workspace);
  t.equal(host.stdout, `${run.stdout.trim()} commit from inside`, 'git log on the host shows the commit');
  t.equal((await git(['status', '--porcelain'], tree.workspace)).stdout, '', 'the host worktree is clean');
});

t.test('git worktree prune and git gc --prune=now inside keep every host worktree registration', async (t) => {
  const { tree, plan, finish } = await setup(t);
  const before = await worktreeList(tree.main);
  t.equal(before.match(/^worktree /gm)?.length, 3, 'three worktrees registered before');
  const registration = await readFile(`${tree.common}/worktrees/s1/gitdir`, 'utf8');
  const run = await runInContainer(
    t,
    plan,
    'git worktree list; git worktree prune -v; echo "prune=$?"; git gc --prune=now; echo "gc=$?"; git -c gc.worktreePruneExpire=now gc --prune=now; echo "gc-now=$?"',
    root0,
  );
  t.match(run.stdout, /\/other +\w+ \[other\] prunable/, 'inside, the other worktree looks stale (so the test is meaningful)');
  t.match(run.stdout, /prune=0/, 'git worktree prune exits 0');
  t.match(run.stderr, /failed to delete .*worktrees\/other.*Read-only file system/, 'prune tried and the read-only registry stopped it');
  t.notMatch(run.stderr, /Removing worktrees\/s1/, "prune never considered the session's own worktree stale");
  t.match(run.stdout, /gc=0/, 'git gc --prune=now exits 0 with the planned configuration');
  finish();
  t.equal(await worktreeList(tree.main), before, 'git worktree list on the host lists every worktree it listed before');
  t.equal(await readFile(`${tree.common}/worktrees/s1/gitdir`, 'utf8'), registration, "the session's registration is unchanged");
  t.equal((await git(['fsck', '--no-progress'], tree.main, false)).exitCode, 0, 'git fsck on the host passes');
  t.equal((await git(['status', '--porcelain'], tree.other)).exitCode, 0, 'the other worktree still works on the host');
});

t.test('control: with the registry mounted read-write instead, prune inside removes the other worktree', async (t) => {
  const { tree, plan } = await setup(t);
  const bare = { ...plan, mounts: plan.mounts.map((m) => (m.destination.endsWith('/worktrees') ? { ...m, readOnly: false } : m)) };
  t.equal(
    bare.mounts.filter((m) => m.readOnly).length,
    plan.mounts.filter((m) => m.readOnly).length - 1,
    'exactly the registry mount changed',
  );
  const run = await runInContainer(t, bare, 'git worktree prune -v', root0);
  t.equal(run.exitCode, 0);
  t.notMatch(await worktreeList(tree.main), /\/other\n/, 'the host lost the other worktree: the read-only mount is what protects it');
});

t.test("control: without the host-path alias, prune inside takes the session's own registration for stale", async (t) => {
  const { tree, plan } = await setup(t);
  const noAlias = {
    ...plan,
    mounts: plan.mounts.filter((m) => m.destination !== tree.workspace && m.destination !== `${tree.workspace}/.git`),
  };
  t.equal(noAlias.mounts.length, plan.mounts.length - 2, 'exactly the alias mount (and the read-only .git on it) was left out');
  const run = await runInContainer(t, noAlias, 'git worktree prune -v', root0);
  t.match(
    run.stderr,
    /Removing worktrees\/s1: gitdir file points to non-existent location/,
    'the alias is what makes the registration resolve',
  );
  t.match(
    run.stderr,
    /failed to delete .*worktrees\/s1': (Read-only file system|Device or resource busy)/,
    'the read-only registry (the own gitdir is a store mounted on it) stopped the deletion',
  );
  t.ok((await readFile(`${tree.common}/worktrees/s1/gitdir`, 'utf8')).startsWith(tree.workspace), "the host's registration is still there");
  t.equal((await git(['status'], tree.workspace, false)).exitCode, 0, 'and the host worktree still works');
});

t.test('control: without the gc configuration, git gc fails on the read-only registry', async (t) => {
  const { tree, plan } = await setup(t);
  const run = await runInContainer(t, { ...plan, env: {} }, 'git gc --prune=now', root0);
  t.not(run.exitCode, 0, 'gc fails');
  t.match(run.stderr, /failed to run (reflog|pack-refs)/);
  t.match(await worktreeList(tree.main), /\/other\n/, 'and still removes nothing');
});

t.test('safe.directory from the plan lets uid 1000 use a tree another user owns; without it git refuses', async (t) => {
  const { tree, plan, finish } = await setup(t);
  await import('node:child_process').then((cp) => cp.execFileSync('chmod', ['-R', 'a+rwX', tree.base]));
  const without = await runInContainer(t, { ...plan, env: {} }, 'git status --porcelain', { user: '1000:1000' });
  t.equal(without.exitCode, 128);
  t.match(without.stderr, /detected dubious ownership in repository at '\/sandbox\/workspaces\/s1'/);
  const withPlan = await runInContainer(t, plan, 'echo x > by-agent && git add by-agent && git commit -q -m "by uid 1000" && id -u', {
    user: '1000:1000',
  });
  t.equal(withPlan.exitCode, 0, `commit as uid 1000 succeeds (${withPlan.stderr})`);
  t.equal(withPlan.stdout.trim(), '1000');
  finish();
  t.equal((await git(['log', '-1', '--format=%s'], tree.workspace)).stdout, 'by uid 1000');
});

t.test('without prepareGitStore the planned mounts do not exist and podman refuses to start', async (t) => {
  const tree = await worktreeSession(await tempDir(t, 'mount-plan-wt-'));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const run = await runInContainer(t, plan, 'echo started', root0);
  t.not(run.exitCode, 0, 'the container did not start');
  t.notMatch(run.stdout, /started/);
  t.match(run.stderr, /statfs \S*git-stores\/s1\/(common|own)\S*: no such file or directory/, 'a source only prepareGitStore makes');
});

t.test('no test container is left behind', async (t) => {
  t.same(
    (await leakedContainers()).filter((n) => n.startsWith('astest-mount-plan')),
    [],
  );
});

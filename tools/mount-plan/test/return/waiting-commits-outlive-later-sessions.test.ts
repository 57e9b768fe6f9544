// Commits that wait are never lost (issue 32, finding 3). Session 1 rewrites its branch: its
// commits wait at refs/agent-sandbox/returned/<id>. Later sessions of the same workspace (same
// id, a store of their own each) fast-forward, or bring nothing new, or park again: none of them
// overwrites or deletes session 1's ref, also when a later session's tip is the very commit that
// waits. The session's commits are written into its store by the host's git, as the session's
// git would (objects into the store, the host's borrowed); the host's own git says what is left.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { tempDir } from '@agent-sandbox/testkit';
import { finishGitStore, planMounts, prepareGitStore } from '../../dist/index.js';
import { git, worktreeSession, type SessionTree } from '../fixtures/git-tree.js';

const branch = 'session-s1';
const side = 'refs/agent-sandbox/returned/s1';

/** One session of workspace s1: a fresh store, `act` writes into it, then the finish. */
async function oneSession(
  tree: SessionTree,
  act: (s: {
    start: string;
    commit: (message: string, parent: string | null) => Promise<string>;
    moveBranch: (tip: string) => Promise<void>;
  }) => Promise<void>,
) {
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = plan.gitStore!;
  prepareGitStore(store, 's1');
  const start = (await git(['rev-parse', branch], tree.main)).stdout.trim();
  const env = {
    GIT_DIR: tree.common,
    GIT_OBJECT_DIRECTORY: `${store.dir}/common/objects`,
    GIT_ALTERNATE_OBJECT_DIRECTORIES: `${tree.common}/objects`,
    GIT_AUTHOR_NAME: 'agent',
    GIT_AUTHOR_EMAIL: 'agent@example.invalid',
    GIT_COMMITTER_NAME: 'agent',
    GIT_COMMITTER_EMAIL: 'agent@example.invalid',
    PATH: process.env['PATH'],
  };
  const commit = async (message: string, parent: string | null) =>
    (
      await execa('git', ['commit-tree', `${start}^{tree}`, ...(parent ? ['-p', parent] : []), '-m', message], { env, extendEnv: false })
    ).stdout.trim();
  const moveBranch = (tip: string) => writeFile(`${store.dir}/common/refs/heads/${branch}`, `${tip}\n`);
  await act({ start, commit, moveBranch });
  return finishGitStore(store.dir);
}

t.test(
  "a later session's fast-forward, an unchanged branch and a second rewrite leave the first session's waiting commits referenced",
  async (t) => {
    const tree = await worktreeSession(await tempDir(t, 'mount-plan-waiting-'));
    const rev = async (ref: string) => (await git(['rev-parse', '--verify', '-q', ref], tree.main, false)).stdout.trim() || null;
    let rewritten = '';
    const first = await oneSession(tree, async (s) => {
      rewritten = await s.commit('session 1 rewrote its branch', null);
      await s.moveBranch(rewritten);
    });
    t.match(first, { outcome: 'side-ref', sideRef: side, to: rewritten });
    t.match(first.message, new RegExp(`git merge ${side}`), 'the end line names the ref and how to merge it');

    let forward = '';
    const second = await oneSession(tree, async (s) => {
      forward = await s.commit('session 2 fast-forwards', s.start);
      await s.moveBranch(forward);
    });
    t.match(second, { outcome: 'fast-forward', to: forward });
    t.equal(await rev(branch), forward, 'the branch advanced');
    t.equal(await rev(side), rewritten, "session 1's commits are still referenced after session 2's import");

    // The owner takes session 1's commit as the branch (a reset); session 3 changes nothing: its
    // tip is the waiting commit itself, and still the waiting ref stays (it is session 1's).
    await git(['update-ref', `refs/heads/${branch}`, rewritten], tree.main);
    const third = await oneSession(tree, async () => {});
    t.match(third, { outcome: 'unchanged', to: rewritten });
    t.equal(await rev(side), rewritten, 'an unchanged import of the same commit deletes no waiting ref');

    let again = '';
    const fourth = await oneSession(tree, async (s) => {
      again = await s.commit('session 4 rewrites too', null);
      await s.moveBranch(again);
    });
    t.match(fourth, { outcome: 'side-ref', sideRef: `${side}+2`, to: again });
    t.equal(await rev(side), rewritten, "session 1's ref is not overwritten by a later rewrite");
    t.equal(await rev(`${side}+2`), again, "session 4's commits wait at a ref of their own");
    t.equal((await git(['fsck', '--full', '--no-progress', '--no-dangling'], tree.main, false)).exitCode, 0, 'git fsck --full passes');
    const unreachable = (await git(['fsck', '--unreachable', '--no-progress', '--no-reflogs'], tree.main, false)).stdout;
    t.notMatch(unreachable, rewritten, "session 1's commit is reachable from a ref, not only a reflog (a gc keeps it)");
    t.notMatch(unreachable, again);
  },
);

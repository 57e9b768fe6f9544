// What stays open, shown and reported: a repository the agent makes inside the workspace (a
// nested .git, committed as a gitlink, no .gitmodules needed) is entered by the host user's plain
// `git status` in the session's worktree, which then runs that repository's core.fsmonitor on the
// host. No mount can close it (the paths are the agent's own). scanNestedGit before and after the
// session names every such repository that is new or changed, so the launcher can warn.
import t from 'tap';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import { diffNestedGit, planMounts, scanNestedGit } from '../../dist/index.js';
import { image, prepareStore, runInContainer, worktreeSession } from '../fixtures/git-tree.js';
import { chownToHostUser, hostUid, hostUser } from '../fixtures/host-user.js';

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

t.test("a nested repository committed as a gitlink runs on the host's git status (open) and is reported", async (t) => {
  const base = await tempDir(t, 'mount-plan-nested-');
  const tree = await worktreeSession(base);
  await chownToHostUser(base);
  const user = await hostUser(base);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const before = await scanNestedGit(tree.workspace);
  t.same(before.entries, [], 'no nested repository before');
  const script = [
    'mkdir -p vendor/lib && cd vendor/lib && git init -q && git commit -q --allow-empty -m x',
    `git config core.fsmonitor "touch ${user.markers}/nested-fsmonitor; false"`,
    'cd ../.. && git update-index --add --cacheinfo 160000,$(git -C vendor/lib rev-parse HEAD),vendor/lib',
    'git commit -q -m "vendor a library"',
    'git init -q --bare tools/cache.git', // a bare repository: git run inside it finds it
    'mkdir -p docs && printf "gitdir: /elsewhere\\n" > docs/.git', // a gitfile
  ].join(' && ');
  const run = await runInContainer(t, plan, script, { user: `${hostUid}:${hostUid}` });
  t.equal(run.exitCode, 0, run.stderr);
  t.match(store.finish(), { outcome: 'fast-forward' }, 'the commit with the gitlink came home');

  const after = await scanNestedGit(tree.workspace);
  t.same(diffNestedGit(before, after), [
    { path: 'docs/.git', change: 'added', type: 'gitfile' },
    { path: 'tools/cache.git', change: 'added', type: 'bare' },
    { path: 'vendor/lib/.git', change: 'added', type: 'gitdir' },
  ]);
  await user.git(['status'], tree.workspace, false);
  t.same(
    await user.ran(),
    ['nested-fsmonitor'],
    "open, as documented: the host's git status in the session worktree ran the nested fsmonitor",
  );
  await user.git(['merge', '-q', '--no-edit', 'session-s1'], tree.main);
  await user.git(['status'], tree.main);
  t.same(await user.ran(), ['nested-fsmonitor'], 'merged into another worktree the gitlink is an empty directory: nothing more ran');
});

t.test('a change to a nested repository that existed before is reported as changed', async (t) => {
  const base = await tempDir(t, 'mount-plan-nested-scan-');
  const { git } = await hostUser(base);
  const { mkdir, writeFile, appendFile } = await import('node:fs/promises');
  const ws = `${base}/ws`;
  await mkdir(`${ws}/sub`, { recursive: true });
  await chownToHostUser(base);
  await git(['init', '-q'], `${ws}/sub`);
  await writeFile(`${ws}/keep.txt`, 'x');
  const before = await scanNestedGit(ws);
  t.equal(before.entries.length, 1);
  await appendFile(`${ws}/sub/.git/config`, '[core]\n\tfsmonitor = evil\n');
  t.same(diffNestedGit(before, await scanNestedGit(ws)), [{ path: 'sub/.git', change: 'changed', type: 'gitdir' }]);
  t.ok((await scanNestedGit(ws, { maxEntries: 1 })).truncated, 'a walk past its limit says it is incomplete');
});

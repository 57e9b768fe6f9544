// The protections cost the agent little: inside a real container as uid 1000 it commits,
// branches, tags, merges, cherry-picks, reverts, rebases, stashes, deletes refs (packed ones
// too), packs refs, runs gc, repack, commit-graph and multi-pack-index (objects/ and
// objects/info/ are mount points that pin the alternates file), all in its own store. What
// fails, fails loudly: writing the repository config. Afterwards the host gains its branch and
// nothing else.
import t from 'tap';
import { lstat, readFile } from 'node:fs/promises';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import { planMounts } from '../dist/index.js';
import { git, image, prepareStore, runInContainer, worktreeSession } from './fixtures/git-tree.js';
import { chownToHostUser, hostUid, hostUser } from './fixtures/host-user.js';

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

const steps: [string, string][] = [
  ['commit', 'echo 1 > f && git add f && git commit -q -m one'],
  ['branch', 'git branch topic'],
  ['tag', 'git tag -a -m t v-agent'],
  ['checkout -b', 'git checkout -q -b feature && echo 2 > g && git add g && git commit -q -m two && git checkout -q session-s1'],
  ['merge', 'git merge -q --no-ff --no-edit feature'],
  ['cherry-pick', 'git checkout -q topic && git cherry-pick feature >/dev/null && git checkout -q session-s1'],
  ['revert', 'echo r > r && git add r && git commit -q -m to-revert && git revert --no-edit HEAD >/dev/null'],
  ['rebase', 'git checkout -q topic && git rebase -q session-s1 && git checkout -q session-s1'],
  ['stash', 'echo 3 >> f && git stash -q && git stash pop -q && git commit -q -am three'],
  [
    'no operation left behind',
    'test ! -e "$(git rev-parse --git-path CHERRY_PICK_HEAD)" && test ! -e "$(git rev-parse --git-path REVERT_HEAD)"',
  ],
  ['delete a loose ref', 'git update-ref -d refs/heads/feature'],
  ['branch -D of a packed branch', 'git branch -D packed'],
  ['pack-refs', 'git pack-refs --all'],
  ['gc', 'git gc -q --prune=now'],
  ['repack', 'git repack -q -a -d -l'],
  [
    'commit-graph',
    'G="$(git rev-parse --git-common-dir)/objects/info/commit-graph" && rm -f "$G" && git commit-graph write --reachable && test -s "$G"',
  ],
  ['multi-pack-index', 'git multi-pack-index write'],
  ['worktree prune', 'git worktree prune'],
];

const refusals: [string, string][] = [['git config', 'git config user.name x']];

t.test('inside a linked worktree the agent does its everyday git; the host sees the result', async (t) => {
  const base = await tempDir(t, 'mount-plan-everyday-');
  const tree = await worktreeSession(base);
  await git(['branch', 'packed'], tree.main);
  await git(['pack-refs', '--all'], tree.main);
  await chownToHostUser(base);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const packedBefore = await readFile(`${tree.common}/packed-refs`, 'utf8');
  const script = [
    ...steps.map(([name, cmd]) => `( ${cmd} ) >/tmp/out 2>&1; echo "step ${name} rc=$?"; [ -s /tmp/out ] && sed 's/^/  /' /tmp/out`),
    ...refusals.map(([name, cmd]) => `( ${cmd} ) >/tmp/out 2>&1; echo "refused ${name} rc=$?"; sed 's/^/  /' /tmp/out`),
  ].join('\n');
  const run = await runInContainer(t, plan, script, { user: `${hostUid}:${hostUid}` });
  t.equal(run.exitCode, 0, run.stderr);
  for (const [name] of steps) t.match(run.stdout, new RegExp(`step ${name} rc=0\\n`), `${name} works inside`);
  for (const [name] of refusals) t.match(run.stdout, new RegExp(`refused ${name} rc=[1-9]`), `${name} fails inside`);
  t.match(run.stdout, /Read-only file system/, 'with an error that says why');
  const report = store.finish();
  t.equal(report.outcome, 'fast-forward', "the session's branch came home");
  t.same(
    report.refsDropped.named.map((r) => r.name),
    ['refs/heads/packed', 'refs/heads/topic', 'refs/tags/v-agent'],
    'the branch it made, the tag it made and the branch it deleted are dropped and named',
  );
  const user = await hostUser(base);
  t.equal(await readFile(`${tree.common}/packed-refs`, 'utf8'), packedBefore, "the host's packed-refs is unchanged");
  t.match(
    (await user.git(['log', '--format=%s', 'session-s1'], tree.main)).stdout,
    /three[\s\S]*Revert[\s\S]*Merge branch 'feature'[\s\S]*one/,
    "the agent's history is on its branch",
  );
  t.equal(
    (await user.git(['rev-parse', '--verify', '-q', 'v-agent^{tag}'], tree.main, false)).exitCode,
    1,
    'its annotated tag stayed in its store',
  );
  t.equal((await user.git(['rev-parse', '--verify', '-q', 'refs/heads/topic'], tree.main, false)).exitCode, 1, 'so did the branch it made');
  t.equal(
    (await user.git(['rev-parse', '--verify', '-q', 'refs/heads/packed'], tree.main)).exitCode,
    0,
    'the packed branch it deleted inside stays here',
  );
  t.equal((await user.git(['fsck', '--no-progress'], tree.main)).exitCode, 0, 'git fsck on the host passes');
  t.equal((await user.git(['status', '--porcelain'], tree.workspace)).stdout, '', 'the session worktree is clean on the host');
  t.equal(
    (await user.git(['commit', '-q', '--allow-empty', '-m', 'host after'], tree.workspace)).exitCode,
    0,
    'and the host user can commit on it (what the import wrote is theirs)',
  );
  t.notOk(
    await lstat(`${tree.root}/git-stores/s1`).then(
      () => true,
      () => false,
    ),
    'the store is gone',
  );
});

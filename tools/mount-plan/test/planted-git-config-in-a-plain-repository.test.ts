// The attack of issue 14, item 1 (planted-git-config-never-runs-on-host.test.ts), on a plain
// repository: the workspace is the repository, with a linked worktree beside it. From inside a
// real container as uid 1000 the agent plants hooks, fsmonitor, includes, a replaced .git and a
// config append after the host rewrote config; the host user then runs status, commit, checkout
// and merge in both worktrees: no marker appears, and main comes home with the agent's commit
// while its tag stays in its store. The control mounts .git inside the workspace (the layout
// before): the same plants run on the host.
import t from 'tap';
import { tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { planMounts } from '../dist/index.js';
import { git, prepareStore, runInContainer } from './fixtures/git-tree.js';
import { chownToHostUser, everydayGit, hostUid, hostUser } from './fixtures/host-user.js';
import { plantScript, type PlantTargets } from './fixtures/plant-script.js';
import { agent, afterHostRewrite, honestWork, hostRewritesConfig, plantLines, requireImageAndRoot, ws } from './fixtures/planted-config.js';

t.before(requireImageAndRoot);

async function plainSession(t: Teardown) {
  const base = await tempDir(t, 'mount-plan-plant-repo-');
  const root = `${base}/root`;
  const workspace = `${root}/workspaces/s1`;
  await git(['init', '-q', '-b', 'main', workspace], base);
  await git(['commit', '-q', '--allow-empty', '-m', 'initial'], workspace);
  await git(['worktree', 'add', '-q', '-b', 'side', `${base}/linked`], workspace);
  await chownToHostUser(base);
  const user = await hostUser(base);
  const plan = await planMounts({ workspace, root, sessionId: 's1' });
  await chownToHostUser(plan.home);
  const targets: PlantTargets = {
    gitDirs: [`${ws}/.git`, `${ws}/.git/worktrees/linked`],
    redirectFiles: [`${ws}/.git/worktrees/linked/commondir`, `${ws}/.git/worktrees/linked/gitdir`],
    createInGitDirs: [`${ws}/.git`],
    replaceDirs: [`${ws}/.git`],
    scratch: `${ws}/evil`,
    scratchHost: `${workspace}/evil`,
    markers: user.markers,
  };
  return { base, workspace, linked: `${base}/linked`, user, plan, targets };
}

t.test("nothing planted in a plain repository session runs in the host user's git in any worktree", async (t) => {
  const { workspace, linked, user, plan, targets } = await plainSession(t);
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const script = [afterHostRewrite(`${ws}/.git/config`, user.markers), honestWork, plantScript(targets)].join('\n');
  const running = runInContainer(t, plan, script, agent);
  await hostRewritesConfig(user, workspace, linked);
  const run = await running;
  t.equal(run.exitCode, 0, `the attack script ran to its end (${run.stderr.slice(-400)})`);
  t.equal(
    plantLines(run.stdout).get('after-host-rewrite'),
    2,
    "after the host's git config rewrote config, the agent still cannot write it",
  );
  t.equal(plantLines(run.stdout).get('after-host-rewrite-live'), 2, 'nor through the live view');
  t.match(run.stdout, /commit rc=0/, 'the agent commits inside');

  const report = store.finish();
  t.match(
    report,
    { branch: 'refs/heads/main', outcome: 'fast-forward', copiedBack: ['index'] },
    "main (checked out at start) came home, and the agent's index (HEAD still names main)",
  );
  t.same(
    report.refsDropped.named.map((r) => r.name),
    ['refs/tags/agent-tag'],
    'its tag stayed in its store',
  );
  t.ok(
    ['commondir', 'config', 'config.moved', 'config.worktree', 'modules'].every((n) => report.leftInStore.named.includes(n)),
    `what the agent made at the .git top stays private (${report.leftInStore.named.join(' ')})`,
  );
  t.equal(
    (await user.git(['status', '--porcelain'], workspace)).stdout,
    '?? .agent-waiting\n?? .host-rewrote-config\n?? evil/',
    "the host sees a clean checkout of the agent's commit (only the test's untracked files)",
  );
  await everydayGit(user, workspace, 'side', 'ws');
  await everydayGit(user, linked, 'main', 'linked');
  t.same(await user.ran(), [], 'nothing planted ran on the host');
  t.match(
    (await user.git(['log', '--format=%s', 'main'], workspace)).stdout,
    /agent commit/,
    "the agent's commit is on main in the host repository",
  );
});

t.test('control: a plain repository mounted with its .git inside the workspace runs the plants on the host', async (t) => {
  const { workspace, user, plan, targets } = await plainSession(t);
  const before = [{ source: workspace, destination: ws, readOnly: false }];
  const run = await runInContainer(
    t,
    { ...plan, mounts: before },
    plantScript({ ...targets, replaceDirs: [], createInGitDirs: [] }),
    agent,
  );
  t.equal(run.exitCode, 0);
  await user.git(['status'], workspace, false);
  await user.git(['checkout', '-q', '-b', 'probe'], workspace, false);
  const ran = await user.ran();
  t.ok(
    ran.includes('replaced-config-g0') && ran.includes('hook-g0-post-checkout'),
    `the planted fsmonitor and hook ran on the host (${ran.join(' ')})`,
  );
});

// The attack of issue 14, item 1, from inside real containers as uid 1000: hooks, core.fsmonitor,
// core.hooksPath, include.path, config.worktree with extensions.worktreeConfig, a rewritten
// commondir, a replaced .git gitfile or directory, a planted commondir, submodule git dirs, and a
// config append after the host itself rewrote config (which detaches a file mount). Then the host
// user (uid 1000) runs status, commit, checkout and merge in every worktree: no marker appears,
// and the agent's own commit is on its branch. Controls with the old layout show the same plants
// running on the host, so the marker check can fail. The agent's tag stays in its store: only its
// branch comes home. The same attack on a plain repository:
// planted-git-config-in-a-plain-repository.test.ts.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { planMounts } from '../dist/index.js';
import { git, prepareStore, runInContainer, worktreeSession } from './fixtures/git-tree.js';
import { chownToHostUser, everydayGit, hostUid, hostUser } from './fixtures/host-user.js';
import { plantScript, type PlantTargets } from './fixtures/plant-script.js';
import { agent, afterHostRewrite, honestWork, hostRewritesConfig, plantLines, requireImageAndRoot, ws } from './fixtures/planted-config.js';

t.before(requireImageAndRoot);

async function linkedSession(t: Teardown) {
  const base = await tempDir(t, 'mount-plan-plant-');
  const tree = await worktreeSession(base);
  await chownToHostUser(base);
  const user = await hostUser(base);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  await chownToHostUser(plan.home);
  const gitDir = `${tree.common}/worktrees/s1`;
  const targets: PlantTargets = {
    gitDirs: [tree.common, gitDir],
    redirectFiles: [`${gitDir}/commondir`, `${gitDir}/gitdir`, `${ws}/.git`, `${tree.workspace}/.git`],
    createInGitDirs: [tree.common],
    scratch: `${tree.workspace}/evil`,
    scratchHost: `${tree.workspace}/evil`,
    markers: user.markers,
  };
  return { tree, user, plan, gitDir, targets };
}

t.test("nothing planted in a linked worktree session runs in the host user's git in any worktree", async (t) => {
  const { tree, user, plan, gitDir, targets } = await linkedSession(t);
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const redirects = await Promise.all(['commondir', 'gitdir'].map((n) => readFile(`${gitDir}/${n}`, 'utf8')));
  // The agent's own work first: some plants (a commondir) break git inside for the agent itself.
  const script = [afterHostRewrite(`${tree.common}/config`, user.markers), honestWork, plantScript(targets)].join('\n');
  const running = runInContainer(t, plan, script, agent);
  await hostRewritesConfig(user, tree.workspace, tree.main);
  const run = await running;
  t.equal(run.exitCode, 0, `the attack script ran to its end (${run.stderr.slice(-400)})`);
  const plants = plantLines(run.stdout);
  t.ok(plants.size >= 40, `every attempt reported (${plants.size})`);
  t.equal(plants.get('after-host-rewrite'), 2, "after the host's git config rewrote config, the agent still cannot write it");
  t.equal(plants.get('after-host-rewrite-live'), 2, 'nor through the live view');
  t.match(run.stdout, /commit rc=0/, 'the agent commits inside');
  t.match(run.stdout, /tag rc=0/, 'the agent tags inside');

  const report = store.finish();
  t.match(report, { outcome: 'fast-forward', copiedBack: ['index'] }, "the agent's branch came home by fast-forward, its index with it");
  t.same(
    report.refsDropped.named.map((r) => r.name),
    ['refs/tags/agent-tag'],
    'its tag stayed in its store, named',
  );
  // Names the host's git dir lacks are not linked (no dangling links in the store): what the
  // agent makes there is as private as a replaced config.
  const left = report.leftInStore.named;
  t.ok(
    ['commondir', 'config', 'config.moved', 'config.worktree', 'modules', 'worktree/commondir', 'worktree/config'].every((n) =>
      left.includes(n),
    ),
    `what the agent made at the top of its git dirs is named and removed with the store (${left.join(' ')})`,
  );
  t.same(
    await Promise.all(['commondir', 'gitdir'].map((n) => readFile(`${gitDir}/${n}`, 'utf8'))),
    redirects,
    "the worktree's real commondir and gitdir are unchanged",
  );
  for (const [worktree, from, tag] of [
    [tree.main, 'session-s1', 'main'],
    [tree.other, 'main', 'other'],
    [tree.workspace, 'other', 'ws'],
  ] as const) {
    await everydayGit(user, worktree, from, tag);
  }
  t.same(await user.ran(), [], 'no planted hook, fsmonitor, hooksPath, include, worktree config or redirect ran on the host');
  t.equal(
    (await user.git(['rev-parse', '--verify', '-q', 'refs/tags/agent-tag'], tree.main, false)).exitCode,
    1,
    "the agent's tag is not in the host repository",
  );
  t.match(
    (await user.git(['log', '--format=%s', 'session-s1'], tree.main)).stdout,
    /host commit ws\n(.*\n)*agent commit/,
    "and on the session's branch",
  );
  t.equal((await user.git(['config', 'user.probe'], tree.main)).stdout, 'rewritten-by-host', "the host's own config write stands");
});

t.test('control: with the common dir mounted read-write (the layout before), the same plants run on the host', async (t) => {
  const { tree, user, plan, gitDir, targets } = await linkedSession(t);
  const before = [
    { source: tree.workspace, destination: ws, readOnly: false },
    { source: tree.workspace, destination: tree.workspace, readOnly: false },
    { source: tree.common, destination: tree.common, readOnly: false },
    { source: `${tree.common}/worktrees`, destination: `${tree.common}/worktrees`, readOnly: true },
    { source: gitDir, destination: gitDir, readOnly: false },
  ];
  const run = await runInContainer(
    t,
    { ...plan, mounts: before },
    plantScript({ ...targets, redirectFiles: [], createInGitDirs: [] }),
    agent,
  );
  t.equal(run.exitCode, 0);
  await user.git(['status'], tree.main, false);
  await user.git(['checkout', '-q', '-b', 'probe'], tree.main, false);
  const ran = await user.ran();
  t.ok(ran.includes('replaced-config-g0'), `core.fsmonitor in the common config the agent wrote ran on the host (${ran.join(' ')})`);
  t.ok(ran.includes('hook-g0-post-checkout'), 'the planted post-checkout hook ran on the host');
});

t.test("control: a rewritten commondir, or one planted in the common dir, redirects the host to the agent's config", async (t) => {
  for (const row of ['rewritten in the own gitdir', 'planted in the common dir'] as const) {
    await t.test(row, async (t) => {
      const { tree, user, plan, gitDir, targets } = await linkedSession(t);
      const before = [
        { source: tree.workspace, destination: ws, readOnly: false },
        { source: tree.workspace, destination: tree.workspace, readOnly: false },
        { source: tree.common, destination: tree.common, readOnly: false },
        { source: gitDir, destination: gitDir, readOnly: false },
      ];
      const only =
        row === 'rewritten in the own gitdir'
          ? { ...targets, gitDirs: [], createInGitDirs: [], redirectFiles: [`${gitDir}/commondir`] }
          : { ...targets, gitDirs: [], createInGitDirs: [tree.common], redirectFiles: [] };
      const run = await runInContainer(t, { ...plan, mounts: before }, plantScript(only), agent);
      t.equal(run.exitCode, 0);
      await user.git(['status'], row === 'rewritten in the own gitdir' ? tree.workspace : tree.main, false);
      t.same(await user.ran(), ['evil-gitdir'], "the host's git status ran the evil common dir's fsmonitor");
    });
  }
});

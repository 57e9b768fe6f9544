// The attack of issue 14, item 1, from inside real containers as uid 1000: hooks, core.fsmonitor,
// core.hooksPath, include.path, config.worktree with extensions.worktreeConfig, a rewritten
// commondir, a replaced .git gitfile or directory, a planted commondir, submodule git dirs, and a
// config append after the host itself rewrote config (which detaches a file mount). Then the host
// user (uid 1000) runs status, commit, checkout and merge in every worktree: no marker appears,
// and the agent's own commit is on its branch. Controls with the old layout show the same plants
// running on the host, so the marker check can fail. The agent's tag stays in its store: only its
// branch comes home.
import t from 'tap';
import { access, readFile, writeFile } from 'node:fs/promises';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { planMounts } from '../dist/index.js';
import { git, image, prepareStore, runInContainer, worktreeSession } from './fixtures/git-tree.js';
import { chownToHostUser, everydayGit, hostUid, hostUser, type HostUser } from './fixtures/host-user.js';
import { plantScript, type PlantTargets } from './fixtures/plant-script.js';

const agent = { user: `${hostUid}:${hostUid}` };
const ws = '/sandbox/workspaces/s1';

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
  if (process.getuid?.() !== 0) throw new Error('these tests simulate the host user with setpriv: run them as root');
});

/** The agent's honest work: a commit on its branch and a tag. */
const honestWork = `echo agent > by-agent && git add by-agent && git commit -q -m "agent commit"; echo "commit rc=$?"; git tag agent-tag; echo "tag rc=$?"`;

/**
 * The agent waits until the host user has rewritten the repository config (git config renames a
 * new file into place, which detaches a read-only mount of the old file), then appends to it.
 */
function afterHostRewrite(config: string, markers: string): string {
  return [
    `touch ${ws}/.agent-waiting`,
    `i=0; while [ ! -e ${ws}/.host-rewrote-config ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`,
    `printf "[core]\\n\\tfsmonitor = touch ${markers}/after-host-rewrite; false\\n" >> ${config}; echo "plant after-host-rewrite rc=$?"`,
    `printf "[core]\\n\\tfsmonitor = touch ${markers}/after-host-rewrite-live; false\\n" >> /sandbox/git/live/config; echo "plant after-host-rewrite-live rc=$?"`,
  ].join('\n');
}

/** The host side of that dance: wait for the agent, run git config, tell the agent. */
async function hostRewritesConfig(user: HostUser, workspace: string, worktree: string): Promise<void> {
  for (let i = 0; i < 300; i += 1) {
    if (await access(`${workspace}/.agent-waiting`).then(() => true, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await user.git(['config', 'user.probe', 'rewritten-by-host'], worktree);
  await writeFile(`${workspace}/.host-rewrote-config`, '');
}

function plantLines(stdout: string): Map<string, number> {
  return new Map([...stdout.matchAll(/^plant (\S+) rc=(\d+)$/gm)].map((m) => [m[1] as string, Number(m[2])]));
}

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

t.test('nothing planted in a linked worktree session runs in the host user\'s git in any worktree', async (t) => {
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
  t.same(report.refsDropped.named.map((r) => r.name), ['refs/tags/agent-tag'], 'its tag stayed in its store, named');
  // Names the host's git dir lacks are not linked (no dangling links in the store): what the
  // agent makes there is as private as a replaced config.
  const left = report.leftInStore.named;
  t.ok(['commondir', 'config', 'config.moved', 'config.worktree', 'modules', 'worktree/commondir', 'worktree/config'].every((n) => left.includes(n)), `what the agent made at the top of its git dirs is named and removed with the store (${left.join(' ')})`);
  t.same(await Promise.all(['commondir', 'gitdir'].map((n) => readFile(`${gitDir}/${n}`, 'utf8'))), redirects, "the worktree's real commondir and gitdir are unchanged");
  for (const [worktree, from, tag] of [[tree.main, 'session-s1', 'main'], [tree.other, 'main', 'other'], [tree.workspace, 'other', 'ws']] as const) {
    await everydayGit(user, worktree, from, tag);
  }
  t.same(await user.ran(), [], 'no planted hook, fsmonitor, hooksPath, include, worktree config or redirect ran on the host');
  t.equal((await user.git(['rev-parse', '--verify', '-q', 'refs/tags/agent-tag'], tree.main, false)).exitCode, 1, "the agent's tag is not in the host repository");
  t.match((await user.git(['log', '--format=%s', 'session-s1'], tree.main)).stdout, /host commit ws\n(.*\n)*agent commit/, "and on the session's branch");
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
  const run = await runInContainer(t, { ...plan, mounts: before }, plantScript({ ...targets, redirectFiles: [], createInGitDirs: [] }), agent);
  t.equal(run.exitCode, 0);
  await user.git(['status'], tree.main, false);
  await user.git(['checkout', '-q', '-b', 'probe'], tree.main, false);
  const ran = await user.ran();
  t.ok(ran.includes('replaced-config-g0'), `core.fsmonitor in the common config the agent wrote ran on the host (${ran.join(' ')})`);
  t.ok(ran.includes('hook-g0-post-checkout'), 'the planted post-checkout hook ran on the host');
});

t.test('control: a rewritten commondir, or one planted in the common dir, redirects the host to the agent\'s config', async (t) => {
  for (const row of ['rewritten in the own gitdir', 'planted in the common dir'] as const) {
    await t.test(row, async (t) => {
      const { tree, user, plan, gitDir, targets } = await linkedSession(t);
      const before = [
        { source: tree.workspace, destination: ws, readOnly: false },
        { source: tree.workspace, destination: tree.workspace, readOnly: false },
        { source: tree.common, destination: tree.common, readOnly: false },
        { source: gitDir, destination: gitDir, readOnly: false },
      ];
      const only = row === 'rewritten in the own gitdir'
        ? { ...targets, gitDirs: [], createInGitDirs: [], redirectFiles: [`${gitDir}/commondir`] }
        : { ...targets, gitDirs: [], createInGitDirs: [tree.common], redirectFiles: [] };
      const run = await runInContainer(t, { ...plan, mounts: before }, plantScript(only), agent);
      t.equal(run.exitCode, 0);
      await user.git(['status'], row === 'rewritten in the own gitdir' ? tree.workspace : tree.main, false);
      t.same(await user.ran(), ['evil-gitdir'], "the host's git status ran the evil common dir's fsmonitor");
    });
  }
});

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

t.test('nothing planted in a plain repository session runs in the host user\'s git in any worktree', async (t) => {
  const { workspace, linked, user, plan, targets } = await plainSession(t);
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const script = [afterHostRewrite(`${ws}/.git/config`, user.markers), honestWork, plantScript(targets)].join('\n');
  const running = runInContainer(t, plan, script, agent);
  await hostRewritesConfig(user, workspace, linked);
  const run = await running;
  t.equal(run.exitCode, 0, `the attack script ran to its end (${run.stderr.slice(-400)})`);
  t.equal(plantLines(run.stdout).get('after-host-rewrite'), 2, "after the host's git config rewrote config, the agent still cannot write it");
  t.equal(plantLines(run.stdout).get('after-host-rewrite-live'), 2, 'nor through the live view');
  t.match(run.stdout, /commit rc=0/, 'the agent commits inside');

  const report = store.finish();
  t.match(report, { branch: 'refs/heads/main', outcome: 'fast-forward', copiedBack: ['index'] }, "main (checked out at start) came home, and the agent's index (HEAD still names main)");
  t.same(report.refsDropped.named.map((r) => r.name), ['refs/tags/agent-tag'], 'its tag stayed in its store');
  t.ok(['commondir', 'config', 'config.moved', 'config.worktree', 'modules'].every((n) => report.leftInStore.named.includes(n)), `what the agent made at the .git top stays private (${report.leftInStore.named.join(' ')})`);
  t.equal(
    (await user.git(['status', '--porcelain'], workspace)).stdout,
    '?? .agent-waiting\n?? .host-rewrote-config\n?? evil/',
    "the host sees a clean checkout of the agent's commit (only the test's untracked files)",
  );
  await everydayGit(user, workspace, 'side', 'ws');
  await everydayGit(user, linked, 'main', 'linked');
  t.same(await user.ran(), [], 'nothing planted ran on the host');
  t.match((await user.git(['log', '--format=%s', 'main'], workspace)).stdout, /agent commit/, "the agent's commit is on main in the host repository");
});

t.test('control: a plain repository mounted with its .git inside the workspace runs the plants on the host', async (t) => {
  const { workspace, user, plan, targets } = await plainSession(t);
  const before = [{ source: workspace, destination: ws, readOnly: false }];
  const run = await runInContainer(t, { ...plan, mounts: before }, plantScript({ ...targets, replaceDirs: [], createInGitDirs: [] }), agent);
  t.equal(run.exitCode, 0);
  await user.git(['status'], workspace, false);
  await user.git(['checkout', '-q', '-b', 'probe'], workspace, false);
  const ran = await user.ran();
  t.ok(ran.includes('replaced-config-g0') && ran.includes('hook-g0-post-checkout'), `the planted fsmonitor and hook ran on the host (${ran.join(' ')})`);
});

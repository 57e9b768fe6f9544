// Real git in a real container for the other two kinds: a plain repository whose
// own worktree registry must survive prune/gc inside, and a submodule checkout
// whose gitdir (and core.worktree) live outside the workspace.
import t from 'tap';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import * as nodePath from 'node:path';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import { planMounts } from '../dist/index.js';
import { git, image, prepareStore, rootOwner, runInContainer } from './fixtures/git-tree.js';

const root0 = { user: '0:0' };

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

t.test('plain repo: commit inside reaches the host after the import; prune and gc inside keep its linked worktrees', async (t) => {
  const base = await tempDir(t, 'mount-plan-repo-');
  const root = `${base}/root`;
  const ws = `${root}/workspaces/s1`;
  await mkdir(ws, { recursive: true });
  await git(['init', '-q', '-b', 'main'], ws);
  await git(['commit', '-q', '--allow-empty', '-m', 'initial'], ws);
  await git(['worktree', 'add', '-q', '-b', 'side', `${base}/linked`], ws);
  const paths = async () =>
    (await git(['worktree', 'list', '--porcelain'], ws)).stdout.split('\n').filter((l) => l.startsWith('worktree '));
  const before = await paths();
  t.equal(before.length, 2);
  const plan = await planMounts({ workspace: ws, root, sessionId: 's1' });
  t.equal(plan.git.kind, 'repo');
  const { finish } = prepareStore(t, plan, rootOwner);
  const run = await runInContainer(
    t,
    plan,
    'echo a > a && git add a && git commit -q -m "inside repo" && git worktree prune -v; echo "prune=$?"; git gc --prune=now; echo "gc=$?"',
    root0,
  );
  t.match(run.stdout, /prune=0/);
  t.match(run.stdout, /gc=0/);
  t.match(run.stderr, /failed to delete .*worktrees\/linked.*Read-only file system/, 'prune tried and the read-only registry stopped it');
  t.match(
    finish(),
    { branch: 'refs/heads/main', outcome: 'fast-forward', copiedBack: ['index'] },
    "its branch (checked out at start) came home, and the agent's index with it",
  );
  t.equal((await git(['log', '-1', '--format=%s'], ws)).stdout, 'inside repo');
  t.equal((await git(['status', '--porcelain'], ws)).stdout, '', 'the host worktree is clean');
  t.same(await paths(), before, 'the host lists every worktree it listed before');
});

t.test('submodule checkout: commit inside reaches the host through the gitdir mounted at the same path', async (t) => {
  const base = await tempDir(t, 'mount-plan-sub-');
  const root = `${base}/root`;
  const gitRoot = `${base}/gitroot`;
  await mkdir(`${root}/workspaces`, { recursive: true });
  await mkdir(`${gitRoot}/subsrc`, { recursive: true });
  await git(['init', '-q', '-b', 'main'], `${gitRoot}/subsrc`);
  await git(['commit', '-q', '--allow-empty', '-m', 'sub initial'], `${gitRoot}/subsrc`);
  await mkdir(`${gitRoot}/super`);
  await git(['init', '-q', '-b', 'main'], `${gitRoot}/super`);
  await git(['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', `${gitRoot}/subsrc`, 'sub'], `${gitRoot}/super`);
  // The session works on the submodule checkout, moved to its pinned workspace.
  const ws = `${root}/workspaces/s1`;
  const gitDir = `${gitRoot}/super/.git/modules/sub`;
  await rename(`${gitRoot}/super/sub`, ws);
  await writeFile(`${ws}/.git`, `gitdir: ${gitDir}\n`);
  await git(['config', '--file', `${gitDir}/config`, 'core.worktree', nodePath.relative(gitDir, ws)], base);
  t.equal((await git(['rev-parse', '--show-toplevel'], ws)).stdout, ws, 'the host sees the moved checkout');

  const plan = await planMounts({ workspace: ws, root, sessionId: 's1', gitRoots: [gitRoot] });
  t.same(plan.git, { kind: 'submodule', gitDir, commonDir: gitDir, hostPathAlias: ws });
  const { finish } = prepareStore(t, plan, rootOwner);
  const run = await runInContainer(
    t,
    plan,
    'echo s > s && git add s && git commit -q -m "inside submodule" && git status --porcelain',
    root0,
  );
  t.equal(run.exitCode, 0, `commit inside exits 0 (${run.stderr})`);
  const noAlias = { ...plan, mounts: plan.mounts.filter((m) => m.destination !== ws && m.destination !== `${ws}/.git`) };
  const broken = await runInContainer(t, noAlias, 'git status', root0);
  t.match(broken.stderr, /cannot chdir to/, 'control: without the host-path alias git cannot reach core.worktree');
  t.match(finish(), { outcome: 'fast-forward' }, 'the branch came home');
  t.equal((await git(['log', '-1', '--format=%s'], ws)).stdout, 'inside submodule', 'git log on the host shows it');
});

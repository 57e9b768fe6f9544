// prepareGitView and finishGitView on real repositories, without a container: what is made on
// the host, that it is harmless and removed afterwards, that a full git dir's HEAD and index come
// back only when the host did not change them and they look like git's, and that a second
// session with the same id cannot start on top of an unfinished one.
import t from 'tap';
import { lstat, mkdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { finishGitView, planMounts, prepareGitView } from '../dist/index.js';
import { git, worktreeSession } from './fixtures/git-tree.js';
import { chownToHostUser, hostUid } from './fixtures/host-user.js';

const exists = (p: string) => lstat(p).then(() => true, () => false);

async function linked(t: Teardown, owner?: number) {
  const tree = await worktreeSession(await tempDir(t, 'mount-plan-view-'));
  if (owner !== undefined) await chownToHostUser(tree.base);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  return { tree, plan, view: plan.gitView!, g: `${tree.common}/worktrees/s1` };
}

t.test('prepare makes the shadow, the packed chain and the placeholders; finish removes all of it', async (t) => {
  const { view, g } = await linked(t, hostUid);
  const manifest = await prepareGitView(view);
  t.equal(manifest.packedMode, 'sticky-chain');
  t.equal(await readlink(`${view.shadow}/config`), '/sandbox/git/live/config');
  t.equal(await readlink(`${view.shadow}/packed-refs`), '/sandbox/git/packed/l1');
  t.equal(await readlink(`${view.packed}/l5`), '/sandbox/git/live/packed-refs');
  const packed = await stat(view.packed);
  t.equal(packed.mode & 0o7777, 0o1777, 'the chain directory is sticky and world-writable');
  t.equal(packed.uid, 0, 'and belongs to the launcher, not the agent');
  t.equal((await stat(view.shadow)).uid, hostUid, "the shadow belongs to the repository's owner (the agent)");
  t.equal((await stat(`${g}/config.worktree`)).size, 0, 'an empty config.worktree placeholder');
  t.ok((await stat(`${g}/modules`)).isDirectory(), 'an empty modules/ placeholder');
  t.ok(await exists(`${view.dir}/view.json`), 'the manifest lies beside, not inside, what is mounted');
  const report = await finishGitView(view.dir);
  t.same(report.removed.sort(), [`${g}/config.worktree`, `${g}/modules`, `${view.gitDir}/packed-refs`].sort(), 'the placeholders, packed-refs among them (the chain never dangles)');
  t.notOk(await exists(view.dir), 'the view directory is gone');
  t.notOk(await exists(`${g}/config.worktree`), 'the placeholders are gone');
  t.ok((await finishGitView(view.dir)).absent, 'finishing again finds nothing to do');
});

t.test('a placeholder the host wrote to during the session is kept; one that existed is never touched', async (t) => {
  const { view, g } = await linked(t, hostUid);
  await mkdir(`${g}/modules`);
  await prepareGitView(view);
  await writeFile(`${g}/config.worktree`, '[core]\n\tsparseCheckout = true\n');
  const report = await finishGitView(view.dir);
  t.same(report.kept, [`${g}/config.worktree`]);
  t.same(report.removed, [`${view.gitDir}/packed-refs`], 'only the untouched packed-refs placeholder is removed');
  t.ok(await exists(`${g}/modules`), 'the modules/ that was there before stays');
});

t.test('where the launcher is the agent\'s own uid, packed-refs is read-only inside instead of a chain', async (t) => {
  const { view } = await linked(t); // owned by root, prepared by root
  const manifest = await prepareGitView(view);
  t.equal(manifest.packedMode, 'read-only');
  t.equal(await readlink(`${view.packed}/l1`), '/sandbox/git/live/packed-refs');
  await finishGitView(view.dir);
});

t.test('a second prepare for the same session id is refused until the first is finished', async (t) => {
  const { view } = await linked(t, hostUid);
  await prepareGitView(view);
  await t.rejects(prepareGitView(view), { code: 'git-view-exists', exitCode: 87 });
  await finishGitView(view.dir);
  await prepareGitView(view);
  await finishGitView(view.dir);
});

async function plain(t: Teardown) {
  const base = await tempDir(t, 'mount-plan-view-repo-');
  const ws = `${base}/root/workspaces/s1`;
  await mkdir(ws, { recursive: true });
  await git(['init', '-q', '-b', 'main'], ws);
  await git(['commit', '-q', '--allow-empty', '-m', 'x'], ws);
  const plan = await planMounts({ workspace: ws, root: `${base}/root`, sessionId: 's1' });
  return { ws, view: plan.gitView! };
}

t.test('a full git dir: HEAD and index are copied back when the agent changed them and the host did not', async (t) => {
  const { ws, view } = await plain(t);
  await prepareGitView(view);
  const hostIndex = await readFile(`${ws}/.git/index`);
  t.same(await readFile(`${view.shadow}/index`), hostIndex, 'the index was copied in');
  await writeFile(`${view.shadow}/HEAD`, 'ref: refs/heads/agent\n');
  await writeFile(`${view.shadow}/MERGE_HEAD`, 'x\n');
  await mkdir(`${view.shadow}/rebase-merge`);
  const report = await finishGitView(view.dir);
  t.same(report.copiedBack, ['HEAD']);
  t.same(report.dropped, ['MERGE_HEAD', 'rebase-merge'], 'unfinished operations stay in the shadow, named');
  t.equal(await readFile(`${ws}/.git/HEAD`, 'utf8'), 'ref: refs/heads/agent\n');
  t.same(await readFile(`${ws}/.git/index`), hostIndex, 'the unchanged index was left alone');
});

t.test('a full git dir: nothing is copied over a host change, and nothing that does not look like git\'s', async (t) => {
  const { ws, view } = await plain(t);
  await prepareGitView(view);
  await writeFile(`${view.shadow}/index`, 'not an index');
  await writeFile(`${view.shadow}/ORIG_HEAD`, 'ref: refs/heads/x\n');
  await rm(`${view.shadow}/HEAD`);
  await symlink('/etc/shadow', `${view.shadow}/HEAD`);
  await writeFile(`${ws}/.git/HEAD`, 'ref: refs/heads/host-moved\n');
  const report = await finishGitView(view.dir);
  t.same(report.copiedBack, []);
  t.same(report.invalid.sort(), ['HEAD', 'ORIG_HEAD', 'index'], 'a symlink, a symref in ORIG_HEAD, a file without the DIRC signature');
  t.equal(await readFile(`${ws}/.git/HEAD`, 'utf8'), 'ref: refs/heads/host-moved\n', "the host's HEAD stands");
  t.notOk(await exists(`${ws}/.git/ORIG_HEAD`));
});

t.test('a full git dir: the agent\'s index is not copied over an index the host rewrote', async (t) => {
  const { ws, view } = await plain(t);
  await prepareGitView(view);
  const agentIndex = Buffer.concat([Buffer.from('DIRC'), Buffer.from([0, 0, 0, 2, 0, 0, 0, 0])]);
  await writeFile(`${view.shadow}/index`, agentIndex);
  await writeFile(`${ws}/x`, 'x');
  await git(['add', 'x'], ws);
  const report = await finishGitView(view.dir);
  t.same(report.conflicts, ['index']);
  t.match((await git(['status', '--porcelain'], ws)).stdout, /^A {2}x$/m, "the host's staged file is still staged");
});

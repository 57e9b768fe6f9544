// The index a session leaves comes back only when every path in it is one git would check out
// and it is no larger than --disk allows (issue 32, findings 2 and 6). An index is a list of
// paths; the session can write a valid one that also lists `../../outside-by-index`, and the
// owner's `git checkout -- .` then writes that file outside the worktree (the control, on a
// scratch repository). Such an index stays in the store: when the branch advanced, the host's
// index is rebuilt from the new tip (`rebuilt`), else the host's stays, and the report says which
// path and why. A sparse 1 GiB index under --disk 100m is not read at all.
import t from 'tap';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, readdirSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { execa } from 'execa';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { finishGitStore, planMounts, prepareGitStore } from '../../dist/index.js';
import { unsafeIndexPath } from '../../dist/return/return-worktree.js';
import { git, prepareStore, rootOwner, worktreeSession } from '../fixtures/git-tree.js';

/** An index listing `bad` in place of `placeholder` (the same length): the bytes swapped and the trailing SHA-1 made right. */
function swapPath(index: Buffer, placeholder: string, bad: string): Buffer {
  const at = index.indexOf(placeholder, 12, 'latin1');
  if (at < 0 || placeholder.length !== bad.length) throw new Error('placeholder not found, or of another length');
  const out = Buffer.from(index);
  out.write(bad, at, 'latin1');
  const body = out.subarray(0, out.length - 20);
  createHash('sha1')
    .update(body)
    .digest()
    .copy(out, out.length - 20);
  return out;
}

const bad = '../../outside-by-index';
const placeholder = 'zz/zz/outside-by-index';

/** A repository whose index lists `placeholder` for README's blob, then swapped to `bad`. */
async function craftedIndexIn(repo: string): Promise<Buffer> {
  const blob = (await git(['rev-parse', 'HEAD:README'], repo)).stdout.trim();
  await git(['update-index', '--add', '--cacheinfo', `100644,${blob},${placeholder}`], repo);
  return swapPath(readFileSync(path.join(repo, '.git', 'index')), placeholder, bad);
}

t.test('the paths git would not check out', async (t) => {
  for (const p of ['../x', 'a/../b', '.git/hooks/x', 'a/.GIT/config', '/etc/x', 'a//b', './a', '']) t.ok(unsafeIndexPath(p), p);
  for (const p of ['a', 'a/b.c', '.gitignore', 'x/.github/y', '..a', 'a..']) t.notOk(unsafeIndexPath(p), p);
});

/**
 * A session of workspace s1 whose branch advances by one commit (written into its store by the
 * host's git, as the session's git would), under `diskBytes`; `leaveIndex` writes what it leaves as its index.
 */
async function advancingSession(
  t: Parameters<typeof tempDir>[0],
  label: string,
  diskBytes: number,
  leaveIndex: (file: string, main: string) => Promise<void>,
) {
  const tree = await worktreeSession(await tempDir(t, `index-${label}-`));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = plan.gitStore!;
  prepareGitStore(store, 's1', { owner: rootOwner, diskBytes });
  t.teardown(() => finishGitStore(store.dir));
  const start = (await git(['rev-parse', 'session-s1'], tree.main)).stdout.trim();
  const env = {
    GIT_DIR: tree.common,
    GIT_OBJECT_DIRECTORY: `${store.dir}/common/objects`,
    GIT_ALTERNATE_OBJECT_DIRECTORIES: `${tree.common}/objects`,
    GIT_AUTHOR_NAME: 'agent',
    GIT_AUTHOR_EMAIL: 'a@example.invalid',
    GIT_COMMITTER_NAME: 'agent',
    GIT_COMMITTER_EMAIL: 'a@example.invalid',
    PATH: process.env['PATH'],
  };
  const blob = (await execa('git', ['hash-object', '-w', '--stdin'], { env, extendEnv: false, input: 'from the session\n' })).stdout.trim();
  const treeId = (
    await execa('git', ['mktree'], {
      env,
      extendEnv: false,
      input: `100644 blob ${(await git(['rev-parse', 'HEAD:README'], tree.main)).stdout.trim()}\tREADME\n100644 blob ${blob}\tnew-file\n`,
    })
  ).stdout.trim();
  const tip = (await execa('git', ['commit-tree', treeId, '-p', start, '-m', 'session'], { env, extendEnv: false })).stdout.trim();
  writeFileSync(`${store.dir}/common/refs/heads/session-s1`, `${tip}\n`);
  const copyDir = ['own', 'common'].map((d) => path.join(store.dir, d)).find((d) => readdirSync(d).includes('index'))!;
  await leaveIndex(path.join(copyDir, 'index'), tree.main);
  const hostIndex = path.join(tree.common, 'worktrees', 's1', 'index');
  return { tree, tip, hostIndex, finish: () => finishGitStore(store.dir) };
}

/** What the host's index lists, as git ls-files --stage prints it, against the tree of `tip`. */
async function indexMatchesTip(tree: { main: string; workspace: string }, tip: string): Promise<{ listed: string; wanted: string }> {
  const listed = (await git(['ls-files', '--stage'], tree.workspace)).stdout.replace(/ 0\t/g, '\t');
  const wanted = (await git(['ls-tree', '-r', tip], tree.main)).stdout.replace(/ blob /g, ' ');
  return { listed, wanted };
}

t.test(
  "a session index listing ../ after a fast-forward: the host's index is rebuilt from the new tip, and the owner's checkout writes nothing outside",
  async (t) => {
    const s = await advancingSession(t, 'rebuilt', 1 << 30, async (file, main) => {
      const scratch = await tempDir(t, 'index-craft-ff-');
      await git(['clone', '-q', main, scratch], scratch);
      writeFileSync(file, await craftedIndexIn(scratch));
    });
    const report = s.finish();
    t.match(report, { outcome: 'fast-forward', to: s.tip, copiedBack: [], rebuilt: ['index'] });
    t.match(
      report.kept.join('\n'),
      /index: it lists "\.\.\/\.\.\/outside-by-index", a path git would not check out.*; rebuilt from refs\/heads\/session-s1/,
    );
    const { listed, wanted } = await indexMatchesTip(s.tree, s.tip);
    t.equal(listed, wanted, "the host's index lists exactly the new tip's tree");
    await git(['checkout', '--', '.'], s.tree.workspace, false);
    t.notOk(existsSync(path.join(s.tree.root, 'outside-by-index')), "the owner's checkout writes nothing outside the worktree");
    t.notOk(existsSync(path.join(s.tree.base, 'outside-by-index')));
    t.equal(
      readFileSync(path.join(s.tree.workspace, 'new-file'), 'utf8'),
      'from the session\n',
      "the checkout wrote the session's file inside",
    );
  },
);

t.test('a sparse 1 GiB index under --disk 100m is not read: the index is rebuilt and stays small', async (t) => {
  const gib = 1 << 30;
  const s = await advancingSession(t, 'sparse', 100 << 20, async (file) => {
    // A valid header, then a hole to 1 GiB: it allocates a few KiB.
    const fd = openSync(file, 'w');
    writeSync(fd, Buffer.from('DIRC\0\0\0\x02\0\0\0\0', 'latin1'));
    ftruncateSync(fd, gib);
    closeSync(fd);
  });
  const rss = process.memoryUsage().rss;
  const report = s.finish();
  const grew = process.memoryUsage().rss - rss;
  t.match(report, { outcome: 'fast-forward', copiedBack: [], rebuilt: ['index'] });
  t.match(report.kept.join('\n'), new RegExp(`index: it is ${gib} bytes, more than the ${100 << 20} the session's --disk allows`));
  const size = statSync(s.hostIndex).size;
  t.ok(size < 4096, `the index left in the user's repository is ${size} bytes`);
  t.ok(grew < 64 << 20, `the launcher's memory grew by ${Math.round(grew / 1048576)} MiB (the file was not read)`);
  const { listed, wanted } = await indexMatchesTip(s.tree, s.tip);
  t.equal(listed, wanted);
});

t.test("control: an index listing ../ makes the owner's git checkout -- . write outside the worktree", async (t) => {
  const base = await tempDir(t, 'index-control-');
  const repo = path.join(base, 'a', 'b', 'repo');
  const tree = await worktreeSession(base);
  await git(['clone', '-q', tree.main, repo], base);
  writeFileSync(path.join(repo, '.git', 'index'), await craftedIndexIn(repo));
  await git(['checkout', '--', '.'], repo, false);
  t.ok(existsSync(path.join(base, 'a', 'outside-by-index')), 'the file landed two levels above the worktree');
});

t.test('a session index listing ../ is not copied back: the host keeps its own and the report names the path', async (t) => {
  const tree = await worktreeSession(await tempDir(t, 'index-paths-'));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = prepareStore(t, plan, rootOwner);
  const hostIndex = readFileSync(path.join(tree.common, 'worktrees', 's1', 'index'));
  // What the session would write: its own index (in the store), valid, with one more path.
  const storeDir = plan.gitStore!.dir;
  const copyDir = ['own', 'common'].map((d) => path.join(storeDir, d)).find((d) => readdirSync(d).includes('index'))!;
  const scratch = await tempDir(t, 'index-craft-');
  await git(['clone', '-q', tree.main, scratch], scratch);
  writeFileSync(path.join(copyDir, 'index'), await craftedIndexIn(scratch));
  const report = store.finish();
  t.same(report.copiedBack, [], 'nothing copied back');
  t.match(report.kept.join('\n'), /index: it lists "\.\.\/\.\.\/outside-by-index", a path git would not check out/);
  t.same(readFileSync(path.join(tree.common, 'worktrees', 's1', 'index')), hostIndex, "the host's index is unchanged");
  await git(['checkout', '--', '.'], tree.workspace, false);
  t.notOk(existsSync(path.join(tree.root, 'outside-by-index')), "the owner's checkout writes nothing outside the worktree");
});

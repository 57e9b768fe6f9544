// The index a session leaves comes back only when every path in it is one git would check out
// (issue 32, finding 2). An index is a list of paths; the session can write a valid one that
// also lists `../../repo/.git/hooks/post-checkout`, and the owner's `git checkout -- .` then writes
// that file outside the worktree (the control, on a scratch repository). Such an index stays in
// the store; the host's index stays, and the report says which path and why.
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { planMounts } from '../../dist/index.js';
import { unsafeIndexPath } from '../../dist/return/return-worktree.js';
import { git, prepareStore, rootOwner, worktreeSession } from '../fixtures/git-tree.js';

/** An index listing `bad` in place of `placeholder` (the same length): the bytes swapped and the trailing SHA-1 made right. */
function swapPath(index: Buffer, placeholder: string, bad: string): Buffer {
  const at = index.indexOf(placeholder, 12, 'latin1');
  if (at < 0 || placeholder.length !== bad.length) throw new Error('placeholder not found, or of another length');
  const out = Buffer.from(index);
  out.write(bad, at, 'latin1');
  const body = out.subarray(0, out.length - 20);
  createHash('sha1').update(body).digest().copy(out, out.length - 20);
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

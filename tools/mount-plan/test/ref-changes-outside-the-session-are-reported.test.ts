// Refs are one shared directory: a session can move, delete or create any branch or tag. The
// snapshot reads every ref from the files as git does (checked against git for-each-ref on real
// repositories), and the diff after a real session lists every change outside the session's own
// branch. Its cost on a repository with 120,000 refs is a figure of pnpm bench, not a check here.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import { diffRefs, finishGitView, planMounts, sessionOwnRefs, snapshotRefs } from '../dist/index.js';
import { git, image, prepareView, runInContainer, worktreeSession } from './fixtures/git-tree.js';
import { chownToHostUser, hostUid, hostUser } from './fixtures/host-user.js';

/** What git itself says: refname -> object id, or `ref: <target>` for a symbolic ref. */
async function gitRefs(worktree: string): Promise<Record<string, string>> {
  const out = (await git(['for-each-ref', '--format=%(refname)%09%(symref)%09%(objectname)'], worktree)).stdout;
  const refs: Record<string, string> = {};
  for (const line of out.split('\n').filter(Boolean)) {
    const [name, symref, objectname] = line.split('\t') as [string, string, string];
    refs[name] = symref ? `ref: ${symref}` : objectname;
  }
  return refs;
}

async function richRepository(base: string) {
  const tree = await worktreeSession(base);
  const { main } = tree;
  await git(['tag', '-a', '-m', 'annotated', 'v1'], main);
  await git(['branch', 'packed-then-moved'], main);
  await git(['branch', 'packed-only'], main);
  await git(['pack-refs', '--all'], main);
  await git(['commit', '-q', '--allow-empty', '-m', 'second'], main);
  await git(['branch', '-f', 'packed-then-moved'], main); // a loose value overriding the packed one
  await git(['tag', 'loose-tag'], main);
  await git(['update-ref', 'refs/remotes/origin/main', 'HEAD'], main);
  await git(['symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/remotes/origin/main'], main);
  await git(['update-ref', 'refs/bisect/bad', 'HEAD'], tree.other); // per-worktree: only the other worktree's
  return tree;
}

t.test('the snapshot reads every ref as git does: loose, packed, peeled tags, symbolic refs, each worktree', async (t) => {
  const tree = await richRepository(await tempDir(t, 'mount-plan-refs-'));
  const snap = await snapshotRefs(tree.common);
  const shared = Object.fromEntries(Object.entries(snap.refs).filter(([name]) => name.startsWith('refs/')));
  t.same(shared, await gitRefs(tree.main), 'refs/ equals git for-each-ref (loose overrides packed, symrefs as ref:)');
  t.equal(snap.refs['refs/heads/packed-then-moved'], (await git(['rev-parse', 'main'], tree.main)).stdout, 'the loose value wins');
  t.equal(snap.refs['main-worktree/HEAD'], 'ref: refs/heads/main');
  t.equal(snap.refs['worktrees/s1/HEAD'], 'ref: refs/heads/session-s1');
  t.equal(snap.refs['worktrees/other/HEAD'], 'ref: refs/heads/other');
  t.equal(snap.refs['worktrees/other/refs/bisect/bad'], (await git(['rev-parse', 'refs/bisect/bad'], tree.other)).stdout, 'per-worktree refs under git\'s name for them');
  t.notOk(Object.keys(snap.refs).some((n) => n.startsWith('^') || n.includes(' ')), 'no peeled line is taken for a ref');
});

t.test('a real session that moves, deletes and creates refs is reported; its own branch is not', async (t) => {
  const base = await tempDir(t, 'mount-plan-refs-session-');
  const tree = await richRepository(base);
  await chownToHostUser(base);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  await prepareView(t, plan);
  const before = await snapshotRefs(tree.common);
  const script = [
    'git commit -q --allow-empty -m "own work"', // the session's own branch: not reported
    'git update-ref refs/heads/other HEAD', // moves another worktree's branch
    'git update-ref -d refs/tags/loose-tag', // deletes a loose tag (packed-refs is only locked)
    'git tag agent-tag', // creates a tag
    'git symbolic-ref refs/remotes/origin/HEAD refs/heads/session-s1', // retargets a symbolic ref
    'git checkout -q -b agent-branch && git checkout -q session-s1', // creates a branch
    'git branch -D packed-only; echo "delete-packed rc=$?"', // packed: cannot be rewritten inside
  ].join(' && ');
  const run = await runInContainer(t, plan, script, { user: `${hostUid}:${hostUid}` });
  t.equal(run.exitCode, 0, run.stderr);
  t.match(run.stdout, /delete-packed rc=1/, 'deleting a packed branch fails loudly inside');
  await finishGitView(plan.gitView!.dir);
  const after = await snapshotRefs(tree.common);
  const own = sessionOwnRefs(before, 's1');
  t.same(own.names, ['worktrees/s1/HEAD', 'refs/heads/session-s1']);
  const head = (await (await hostUser(base)).git(['rev-parse', 'session-s1'], tree.main)).stdout;
  t.same(diffRefs(before, after, own), [
    { name: 'refs/heads/agent-branch', old: null, new: head },
    { name: 'refs/heads/other', old: before.refs['refs/heads/other'], new: head },
    { name: 'refs/remotes/origin/HEAD', old: 'ref: refs/remotes/origin/main', new: 'ref: refs/heads/session-s1' },
    { name: 'refs/tags/agent-tag', old: null, new: head },
    { name: 'refs/tags/loose-tag', old: before.refs['refs/tags/loose-tag'], new: null },
  ]);
  t.equal(after.refs['refs/heads/packed-only'], before.refs['refs/heads/packed-only'], 'the packed branch is still on the host');
});

t.test('the session of a plain repository owns its HEAD, its branch and the main worktree refs', async (t) => {
  const base = await tempDir(t, 'mount-plan-refs-repo-');
  await mkdir(`${base}/r`);
  await git(['init', '-q', '-b', 'main'], `${base}/r`);
  await git(['commit', '-q', '--allow-empty', '-m', 'x'], `${base}/r`);
  const before = await snapshotRefs(`${base}/r/.git`);
  await git(['commit', '-q', '--allow-empty', '-m', 'y'], `${base}/r`);
  await git(['update-ref', 'refs/bisect/bad', 'HEAD'], `${base}/r`);
  await git(['branch', 'new'], `${base}/r`);
  const after = await snapshotRefs(`${base}/r/.git`);
  t.same(diffRefs(before, after, sessionOwnRefs(before)).map((c) => c.name), ['refs/heads/new']);
});

t.test('a snapshot of 2,000 loose and 10,000 packed refs lists what git for-each-ref lists (its cost is in pnpm bench)', async (t) => {
  const base = await tempDir(t, 'mount-plan-refs-many-');
  const repo = `${base}/r`;
  await mkdir(repo);
  await git(['init', '-q', '-b', 'main'], repo);
  await git(['commit', '-q', '--allow-empty', '-m', 'x'], repo);
  const id = (await git(['rev-parse', 'HEAD'], repo)).stdout;
  const packed = ['# pack-refs with: peeled fully-peeled sorted '];
  for (let i = 0; i < 10_000; i += 1) packed.push(`${id} refs/tags/p${String(i).padStart(6, '0')}`);
  await writeFile(`${repo}/.git/packed-refs`, `${packed.join('\n')}\n`);
  for (let d = 0; d < 10; d += 1) {
    await mkdir(`${repo}/.git/refs/heads/d${d}`, { recursive: true });
    await Promise.all(Array.from({ length: 200 }, (_, i) => writeFile(`${repo}/.git/refs/heads/d${d}/b${i}`, `${id}\n`)));
  }
  const start = process.hrtime.bigint();
  const snap = await snapshotRefs(`${repo}/.git`);
  const ours = Number(process.hrtime.bigint() - start) / 1e6;
  const gitStart = process.hrtime.bigint();
  const viaGit = await gitRefs(repo);
  const theirs = Number(process.hrtime.bigint() - gitStart) / 1e6;
  t.equal(Object.keys(snap.refs).length, 12_002, '10,000 packed + 2,000 loose + main + HEAD');
  t.equal(Object.keys(viaGit).length, 12_001, 'git lists the same refs (HEAD aside)');
  for (const [name, value] of Object.entries(viaGit)) if (snap.refs[name] !== value) t.fail(`${name}: ours ${snap.refs[name]}, git's ${value}`);
  t.comment(`snapshotRefs: ${ours.toFixed(0)} ms; git for-each-ref: ${theirs.toFixed(0)} ms (a figure, not a check)`);
});

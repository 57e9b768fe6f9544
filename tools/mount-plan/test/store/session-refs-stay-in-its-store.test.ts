// A session's refs are its own: it can move, delete and create any branch, tag, symbolic ref,
// replace ref or note, pack refs and make thousands, all in its store. Afterwards the host's refs
// are exactly what they were (git for-each-ref before and after, the session's branch aside), and
// every change is counted: at most 20 named, then a count. The store starts with the host's refs
// as git itself lists them, per-worktree refs aside.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import { parsePackedRefs, planMounts } from '../../dist/index.js';
import { git, image, prepareStore, runInContainer, worktreeSession } from '../fixtures/git-tree.js';
import { chownToHostUser, hostUid, hostUser } from '../fixtures/host-user.js';

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

/** What git itself lists: refname -> object id (symbolic refs as their target's). */
async function gitRefs(worktree: string, run = git): Promise<Map<string, string>> {
  const out = (await run(['for-each-ref', '--format=%(refname) %(objectname)'], worktree)).stdout;
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ') as [string, string]),
  );
}

async function richRepository(base: string) {
  const tree = await worktreeSession(base);
  const { main } = tree;
  await git(['tag', '-a', '-m', 'annotated', 'v1'], main);
  await git(['branch', 'packed-only'], main);
  await git(['pack-refs', '--all'], main);
  await git(['commit', '-q', '--allow-empty', '-m', 'second'], main);
  await git(['tag', 'loose-tag'], main);
  await git(['update-ref', 'refs/remotes/origin/main', 'HEAD'], main);
  await git(['symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/remotes/origin/main'], main);
  await git(['update-ref', 'refs/bisect/bad', 'HEAD'], tree.other); // per-worktree: the other worktree's own
  return tree;
}

t.test("the store starts with the host's refs as git lists them, per-worktree refs aside", async (t) => {
  const tree = await richRepository(await tempDir(t, 'mount-plan-refs-'));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const { manifest } = prepareStore(t, plan);
  const inStore = new Map<string, string>();
  parsePackedRefs(await readFile(`${plan.gitStore!.dir}/common/packed-refs`), inStore);
  t.same([...inStore].sort(), [...(await gitRefs(tree.main))].filter(([n]) => !n.startsWith('refs/bisect/')).sort());
  t.equal(manifest.branch, 'refs/heads/session-s1', "the session's branch is the one its HEAD names");
  t.equal(manifest.refCount, inStore.size);
});

t.test("a session that moves, deletes and makes refs changes none of the host's; each change is counted", async (t) => {
  const base = await tempDir(t, 'mount-plan-refs-session-');
  const tree = await richRepository(base);
  await chownToHostUser(base);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const user = await hostUser(base);
  const before = await gitRefs(tree.main, user.git);
  const script = [
    'git commit -q --allow-empty -m "own work"',
    'git update-ref refs/heads/main HEAD', // the main worktree's branch
    'git update-ref refs/heads/other HEAD', // another worktree's branch
    'git tag -f v1 HEAD', // an existing tag
    'git update-ref -d refs/tags/loose-tag',
    'git branch -D packed-only', // a packed branch: packed-refs is the store's own
    'git symbolic-ref refs/remotes/origin/HEAD refs/heads/session-s1',
    'git replace HEAD~1 HEAD',
    'git notes add -m "a note" HEAD',
    'git pack-refs --all',
    'seq 1 5000 | sed "s|.*|create refs/agent/r& HEAD|" | git update-ref --stdin',
    'echo "refs inside: $(git for-each-ref | wc -l)"',
  ].join(' && ');
  const run = await runInContainer(t, plan, script, { user: `${hostUid}:${hostUid}` });
  t.equal(run.exitCode, 0, run.stderr);
  t.ok(Number(/refs inside: (\d+)/.exec(run.stdout)?.[1]) >= 5000, `the 5000 refs were made inside (${run.stdout.trim()})`);
  const report = store.finish();
  const head = (await user.git(['rev-parse', 'session-s1'], tree.main)).stdout;
  t.match(report, { outcome: 'fast-forward', to: head }, "the session's branch came home");
  const after = await gitRefs(tree.main, user.git);
  after.delete('refs/heads/session-s1');
  before.delete('refs/heads/session-s1');
  t.same(
    [...after].sort(),
    [...before].sort(),
    'every other host ref is exactly as it was: main, other, the tags, the symbolic ref, the packed branch',
  );
  t.notOk(
    [...after.keys()].some((n) => n.startsWith('refs/replace/') || n.startsWith('refs/notes/') || n.startsWith('refs/agent/')),
    'no replace ref, note or made ref reached the host',
  );
  t.equal(report.refsDropped.named.length, 20, '20 named');
  t.equal(
    report.refsDropped.named.length + report.refsDropped.others,
    5000 + 8,
    'and every change counted: 5000 made, main, other, v1, loose-tag, packed-only, the symbolic ref, a replace ref, a note',
  );
  t.same(
    report.refsDropped.named.slice(0, 2).map((r) => r.name),
    ['refs/agent/r1', 'refs/agent/r10'],
    'named in order',
  );
  t.equal((await user.git(['fsck', '--full', '--no-progress'], tree.main, false)).exitCode, 0, 'git fsck --full on the host passes');
});

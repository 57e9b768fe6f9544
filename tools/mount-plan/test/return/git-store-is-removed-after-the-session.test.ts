// prepareGitStore and finishGitStore on real repositories, without a container: what is made,
// that nothing is written into the host's git dir, that the store goes afterwards whatever the
// session left in it (links, a FIFO, files where directories were) without following or hanging
// on any of it, that HEAD and the index come back only as the rules say, and that a second
// session with the same id cannot start on top of an unfinished one.
import t from 'tap';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { finishGitStore, planMounts, prepareGitStore } from '../../dist/index.js';
import { git, worktreeSession } from '../fixtures/git-tree.js';

const exists = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );

/** Every path below `dir` with its type, size and content hash: what "unchanged" means. */
async function treeOf(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(dir, { recursive: true })).sort()) {
    const info = await lstat(`${dir}/${name}`);
    const hash = info.isFile()
      ? createHash('sha256')
          .update(await readFile(`${dir}/${name}`))
          .digest('hex')
      : '';
    out.push(`${name} ${info.mode} ${info.uid} ${info.size} ${hash}`);
  }
  return out;
}

async function linked(t: Teardown) {
  const tree = await worktreeSession(await tempDir(t, 'mount-plan-store-'));
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  return { tree, store: plan.gitStore!, g: `${tree.common}/worktrees/s1` };
}

t.test('prepare makes the store beside the host repository and writes nothing into it; finish removes it', async (t) => {
  const { tree, store } = await linked(t);
  const hostBefore = await treeOf(tree.common);
  const manifest = prepareGitStore(store, 's1');
  t.equal(await readlink(`${store.dir}/common/config`), '/sandbox/git/live/config');
  t.equal(await readlink(`${store.dir}/common/HEAD`), '/sandbox/git/live/HEAD', "the main worktree's HEAD is the host's, read-only");
  t.equal(
    await readFile(`${store.dir}/common/objects/info/alternates`, 'utf8'),
    '/sandbox/git/live/objects\n',
    "the host's objects are borrowed, not copied",
  );
  t.same(await readdir(`${store.dir}/common/objects/pack`), [], 'no object is copied in');
  t.equal(await readlink(`${store.dir}/own/commondir`), '/sandbox/git/live/worktrees/s1/commondir');
  t.same(await readFile(`${store.dir}/own/index`), await readFile(`${tree.common}/worktrees/s1/index`), "the worktree's index is a copy");
  t.equal((await stat(`${store.dir}/common`)).uid, 1000, "the store's inside belongs to the agent (uid 1000 under a root launcher)");
  t.equal((await stat(`${store.dir}/store.json`)).mode & 0o777, 0o600, "the manifest is the launcher's, beside what is mounted");
  t.equal(manifest.branch, 'refs/heads/session-s1');
  t.same(await treeOf(tree.common), hostBefore, 'the host git dir is byte for byte what it was');
  const report = finishGitStore(store.dir);
  t.match(report, { absent: false, outcome: 'unchanged', refsDropped: { named: [], others: 0 }, copiedBack: [], kept: [] });
  t.notOk(await exists(store.dir), 'the store is gone');
  t.same(await treeOf(tree.common), hostBefore, 'and the host git dir is still what it was');
  t.ok(finishGitStore(store.dir).absent, 'finishing again finds nothing to do');
});

t.test('a second prepare for the same session id is refused until the first is finished', async (t) => {
  const { store } = await linked(t);
  prepareGitStore(store, 's1');
  t.throws(() => prepareGitStore(store, 's1'), { code: 'git-store-exists', exitCode: 87 });
  finishGitStore(store.dir);
  prepareGitStore(store, 's1');
  finishGitStore(store.dir);
});

t.test(
  'what a session plants in its store (links out, a FIFO, a bogus pack, files for directories) is never followed, opened or waited on',
  async (t) => {
    const { tree, store } = await linked(t);
    prepareGitStore(store, 's1');
    const outside = `${tree.base}/outside`;
    await mkdir(`${outside}/dir`, { recursive: true });
    await writeFile(`${outside}/dir/keep`, 'keep');
    const c = `${store.dir}/common`;
    await symlink(`${outside}/dir`, `${c}/refs/heads/linked-dir`);
    await symlink('/etc/passwd', `${c}/refs/heads/linked-file`);
    await execa('mkfifo', [`${c}/refs/heads/fifo`, `${c}/objects/pack/pack-${'a'.repeat(40)}.pack`]);
    await writeFile(`${c}/objects/pack/pack-${'a'.repeat(40)}.idx`, 'not an index');
    await symlink(`${outside}/dir`, `${c}/objects/ab`);
    await writeFile(`${c}/objects/info/alternates`, `${outside}\n`);
    await rm(`${c}/logs`, { recursive: true });
    await writeFile(`${c}/logs`, 'a file');
    await rm(`${store.dir}/own/HEAD`);
    await symlink('/etc/shadow', `${store.dir}/own/HEAD`);
    const began = Date.now();
    const report = finishGitStore(store.dir);
    t.ok(Date.now() - began < 30_000, `finish returned in ${Date.now() - began} ms`);
    t.match(report, { outcome: 'unchanged' }, "the session's branch was not moved: nothing to fetch, nothing opened");
    t.same(
      report.refsDropped.named.map((r) => [r.name, r.new]),
      [
        ['refs/heads/fifo', 'invalid: a FIFO'],
        ['refs/heads/linked-dir', `invalid: symlink to ${JSON.stringify(`${outside}/dir`.slice(0, 40))}`],
        ['refs/heads/linked-file', 'invalid: symlink to "/etc/passwd"'],
      ],
      'a link is a (broken) symbolic ref, never followed or descended; the FIFO is named as one, never opened',
    );
    t.match(
      report.kept,
      [/^HEAD: the session left it a symbolic link to "\/etc\/shadow"; the host's stays$/],
      'a HEAD replaced by a link does not come back, and is named as a link, not "(removed)"',
    );
    t.notOk(await exists(store.dir), 'the store is gone');
    t.equal(await readFile(`${outside}/dir/keep`, 'utf8'), 'keep', 'what its links pointed at is untouched');
    t.ok(await exists('/etc/passwd'));
  },
);

t.test(
  'a store whose refs/ and objects/ are links to another repository: nothing of that repository is read, nothing of it comes home',
  async (t) => {
    const { tree, store } = await linked(t);
    prepareGitStore(store, 's1');
    const other = `${tree.base}/other-repo`;
    await git(['init', '-q', '-b', 'main', other], tree.base);
    await git(['commit', '-q', '--allow-empty', '-m', 'not yours'], other);
    const foreign = (await git(['rev-parse', 'HEAD'], other)).stdout.trim();
    await mkdir(`${other}/.git/refs/heads/deep`, { recursive: true });
    await writeFile(`${other}/.git/refs/heads/deep/secret`, `${foreign}\n`);
    const c = `${store.dir}/common`;
    await rm(`${c}/objects`, { recursive: true });
    await symlink(`${other}/.git/objects`, `${c}/objects`);
    await writeFile(`${c}/packed-refs`, `${foreign} refs/heads/session-s1\n`);
    await rm(`${c}/refs`, { recursive: true });
    await symlink(`${other}/.git/refs`, `${c}/refs`);
    const report = finishGitStore(store.dir);
    t.match(
      report,
      { outcome: 'failed', to: foreign },
      'the branch names an object the store does not hold (its objects/ is a link): refused',
    );
    t.notMatch(JSON.stringify(report), /deep\/secret/, 'the linked refs/ was never walked');
    t.equal(
      (await git(['cat-file', '-e', foreign], tree.main, false)).exitCode,
      1,
      "the other repository's commit is not in the host repository",
    );
    t.equal(
      (await git(['rev-parse', 'session-s1'], tree.main)).stdout.trim(),
      (await git(['rev-parse', 'main'], tree.main)).stdout.trim(),
      'the branch did not move',
    );
  },
);

t.test('an index git cannot read does not come back: the branch does, and the index is rebuilt from it', async (t) => {
  const { tree, store, g } = await linked(t);
  prepareGitStore(store, 's1');
  // A commit the host has, one ahead of the session's branch: what a session's store would name after committing.
  await git(['checkout', '-q', '-b', 'ahead', 'session-s1'], tree.main);
  await git(['commit', '-q', '--allow-empty', '-m', 'ahead'], tree.main);
  const ahead = (await git(['rev-parse', 'HEAD'], tree.main)).stdout.trim();
  await mkdir(`${store.dir}/common/refs/heads`, { recursive: true });
  await writeFile(`${store.dir}/common/refs/heads/session-s1`, `${ahead}\n`);
  await writeFile(
    `${store.dir}/own/index`,
    Buffer.concat([Buffer.from('DIRC'), Buffer.from([0, 0, 0, 2, 0, 0, 0, 9]), Buffer.from('garbage')]),
  );
  const report = finishGitStore(store.dir);
  t.match(report, {
    outcome: 'fast-forward',
    to: ahead,
    copiedBack: [],
    rebuilt: ['index'],
    kept: [/^index: it is not an index as git writes one: .*; rebuilt from refs\/heads\/session-s1/],
  });
  const listed = (await git(['ls-files', '--stage'], tree.workspace)).stdout.replace(/ 0\t/g, '\t');
  t.equal(
    listed,
    (await git(['ls-tree', '-r', ahead], tree.main)).stdout.replace(/ blob /g, ' '),
    "the host's index lists the new tip's tree",
  );
  t.equal((await git(['rev-parse', 'session-s1'], tree.main)).stdout.trim(), ahead, 'the branch came home');
});

async function plain(t: Teardown) {
  const base = await tempDir(t, 'mount-plan-store-repo-');
  const ws = `${base}/root/workspaces/s1`;
  await mkdir(ws, { recursive: true });
  await git(['init', '-q', '-b', 'main'], ws);
  await git(['commit', '-q', '--allow-empty', '-m', 'x'], ws);
  const plan = await planMounts({ workspace: ws, root: `${base}/root`, sessionId: 's1' });
  return { ws, store: plan.gitStore! };
}

t.test("a full git dir: HEAD never comes back; the index does not come back over the host's", async (t) => {
  const { ws, store } = await plain(t);
  prepareGitStore(store, 's1');
  const hostIndex = await readFile(`${ws}/.git/index`);
  t.same(await readFile(`${store.dir}/common/index`), hostIndex, 'the index was copied in');
  await writeFile(`${store.dir}/common/HEAD`, 'ref: refs/heads/agent\n');
  await writeFile(`${store.dir}/common/index`, Buffer.concat([Buffer.from('DIRC'), Buffer.from([0, 0, 0, 2, 0, 0, 0, 0])]));
  await writeFile(`${store.dir}/common/MERGE_HEAD`, 'x\n');
  await mkdir(`${store.dir}/common/rebase-merge`);
  const report = finishGitStore(store.dir);
  t.same(report.copiedBack, []);
  t.match(report.kept, [
    /^HEAD: the session left it at "ref: refs\/heads\/agent"/,
    /^index: the session's HEAD no longer names its branch/,
  ]);
  t.same(report.leftInStore.named, ['MERGE_HEAD', 'rebase-merge'], 'unfinished operations stay in the store, named');
  t.equal(await readFile(`${ws}/.git/HEAD`, 'utf8'), 'ref: refs/heads/main\n', "the host's HEAD stands");
  t.same(await readFile(`${ws}/.git/index`), hostIndex, "the host's index stands");
});

t.test('a full git dir: an index the host rewrote during the session stays', async (t) => {
  const { ws, store } = await plain(t);
  prepareGitStore(store, 's1');
  await writeFile(`${store.dir}/common/index`, Buffer.concat([Buffer.from('DIRC'), Buffer.from([0, 0, 0, 2, 0, 0, 0, 0])]));
  await writeFile(`${ws}/x`, 'x');
  await git(['add', 'x'], ws);
  const report = finishGitStore(store.dir);
  t.match(report.kept, [/^index: it changed here during the session/]);
  t.match((await git(['status', '--porcelain'], ws)).stdout, /^A {2}x$/m, "the host's staged file is still staged");
});

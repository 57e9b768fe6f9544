// A failed import must not lose commits (a refused one leaves nothing in the host repository:
// refused-import-leaves-nothing.test.ts). When the cause is on the host's side (here: a lock held on the branch, the way a
// concurrent git or a crashed one leaves it), the store is kept with its commits, kept.json counts the attempts, and the next finish, once
// the cause is gone, brings the branch home and removes the store. When the cause is the
// session's own content (its branch names objects it does not have, or an object fails git's
// checks), the store goes and the report says why: those commits cannot come home anyway.
// The session's commits are written into the store by the host's git (objects into the store,
// the host's borrowed), as a session would; the host's own git says what happened.
import t from 'tap';
import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { finishGitStore, maxImportRetries } from '../../dist/index.js';
import { git } from '../fixtures/git-tree.js';
import { branch, session, side } from '../fixtures/store-session.js';

t.test(
  'a waiting ref an earlier session holds is never overwritten, nor one another git has locked: the commits wait at the next free name',
  async (t) => {
    const s = await session(t, 'waiting');
    // An earlier session's commits, waiting at the first name (the host's git wrote them there).
    const earlier = (await git(['commit-tree', `${s.start}^{tree}`, '-p', s.start, '-m', 'an earlier session'], s.tree.main)).stdout.trim();
    await git(['update-ref', side, earlier], s.tree.main);
    // The second name is locked, as a git that holds (or crashed holding) it leaves it.
    await writeFile(`${s.tree.common}/${side}+2.lock`, '');
    const rewritten = await s.write(['commit-tree', `${s.start}^{tree}`, '-m', 'rewritten, no parent']);
    await s.moveBranch(rewritten);
    const report = finishGitStore(s.store.dir);
    t.match(report, { outcome: 'side-ref', sideRef: `${side}+3`, to: rewritten });
    t.equal(await s.rev(side), earlier, "the earlier session's commits are still referenced");
    t.equal(await s.rev(`${side}+3`), rewritten, "this session's commits wait at a ref of their own");
    t.equal(await s.rev(branch), s.start, 'the branch here did not move');
    t.notOk(existsSync(s.store.dir), 'the store is gone: the commits are safe in the repository');
    await rm(`${s.tree.common}/${side}+2.lock`);
    t.equal(await s.fsck(), 0, 'git fsck --full passes');
  },
);

t.test(
  'a lock held on the branch here stops the advance: the commits wait at the side ref, the store is kept, and the retry advances the branch',
  async (t) => {
    const s = await session(t, 'advance');
    const tip = await s.commit('honest');
    await writeFile(`${s.tree.common}/refs/heads/${branch}.lock`, '');
    const first = finishGitStore(s.store.dir);
    t.match(first, { outcome: 'side-ref', sideRef: side, to: tip, storeKept: { attempts: 1, retried: true } });
    t.equal(await s.rev(side), tip, 'the commits are already safe at the side ref');
    t.ok(existsSync(s.store.dir), 'the store is kept');
    await rm(`${s.tree.common}/refs/heads/${branch}.lock`);
    t.match(finishGitStore(s.store.dir), { outcome: 'fast-forward', to: tip });
    t.equal(await s.rev(branch), tip, 'the branch advanced');
    t.equal(await s.rev(side), null, 'the side ref went with it');
    t.notOk(existsSync(s.store.dir));
  },
);

t.test(
  `after ${maxImportRetries} failed retries the store says it waits for the user, and it still imports once the cause is gone`,
  async (t) => {
    const s = await session(t, 'retries');
    const tip = await s.commit('honest');
    await s.lockSide();
    const attempts = [];
    for (let i = 0; i <= maxImportRetries + 1; i += 1) attempts.push(finishGitStore(s.store.dir).storeKept);
    t.same(
      attempts.map((k) => [k?.attempts, k?.retried]),
      [
        [1, true],
        [2, true],
        [3, true],
        [4, false],
        [5, false],
      ],
    );
    await rm(`${s.tree.common}/refs/heads/${branch}.lock`);
    t.match(finishGitStore(s.store.dir), { outcome: 'fast-forward', to: tip });
    t.equal(await s.rev(side), null, 'the retries parked the commits once, and that ref went with the advance');
    t.equal(await s.rev(`${side}+2`), null);
    t.notOk(existsSync(s.store.dir));
  },
);

t.test(
  "the session's own content decides even with a host cause present: a branch naming an object the store lacks discards the store, with why",
  async (t) => {
    const s = await session(t, 'missing');
    await s.moveBranch('1'.repeat(40));
    await s.lockSide();
    const report = finishGitStore(s.store.dir);
    t.match(report, { outcome: 'failed', to: '1'.repeat(40) });
    t.match(report.message, /an object its store does not have/);
    t.notOk(report.storeKept, 'not kept');
    t.notOk(existsSync(s.store.dir), 'the store is gone');
    t.equal(await s.rev(branch), s.start);
  },
);

t.test('a commit whose parent the session deleted from its store: discarded, with why', async (t) => {
  const s = await session(t, 'parent');
  const parent = await s.commit('first');
  const child = await s.write(['commit-tree', `${s.start}^{tree}`, '-p', parent, '-m', 'second']);
  await s.moveBranch(child);
  await rm(`${s.store.dir}/common/objects/${parent.slice(0, 2)}/${parent.slice(2)}`);
  const report = finishGitStore(s.store.dir);
  t.match(report, { outcome: 'failed', to: child });
  t.match(report.message, /reaches objects its store does not have/);
  t.notOk(report.storeKept);
  t.notOk(existsSync(s.store.dir));
  t.equal(await s.fsck(), 0, 'git fsck --full passes: nothing of it was imported');
});

t.test("an object git's checks refuse (transfer.fsckObjects): discarded, with why", async (t) => {
  const s = await session(t, 'invalid');
  const tree = (await git(['rev-parse', `${s.start}^{tree}`], s.tree.main)).stdout.trim();
  const bad = await s.write(
    ['hash-object', '-t', 'commit', '-w', '--literally', '--stdin'],
    `tree ${tree}\nparent ${s.start}\nauthor agent <agent@example.invalid 1 +0000\ncommitter agent <agent@example.invalid> 1 +0000\n\nbad\n`,
  );
  await s.moveBranch(bad);
  const report = finishGitStore(s.store.dir);
  t.match(report, { outcome: 'failed', to: bad });
  t.match(report.message, /fails git's checks/);
  t.notOk(report.storeKept);
  t.notOk(existsSync(s.store.dir));
  t.equal((await git(['cat-file', '-e', bad], s.tree.main, false)).exitCode, 1, 'the object did not reach the host repository');
  t.equal(await s.fsck(), 0, 'git fsck --full passes');
});

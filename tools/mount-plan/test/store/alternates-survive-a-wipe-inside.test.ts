// What ties the session's store to the host's objects (objects/info/alternates) cannot be
// deleted, emptied or moved away from inside: the file is a read-only bind of itself, and
// objects/ and objects/info/ are mount points (a mount point cannot be unlinked or renamed:
// EBUSY). So a session that first acts as an attacker (it deletes every object file it sees,
// the host's included, its refs, packed-refs and logs, and tries to move the alternates away)
// and then as an honest agent (it recovers its branch from the tip it remembered and commits)
// gets its commit home, and the host repository stays whole. The control runs the same session
// without the three pinned mounts: the wipe takes the alternates with it, the store no longer
// sees the host's objects, and the honest recovery and commit fail.
import t from 'tap';
import { imageExists, tempDir } from '@agent-sandbox/testkit';
import type { Teardown } from '@agent-sandbox/testkit';
import { planMounts } from '../../dist/index.js';
import { image, prepareStore, runInContainer, worktreeSession } from '../fixtures/git-tree.js';
import { chownToHostUser, hostUid, hostUser } from '../fixtures/host-user.js';

t.before(async () => {
  if (!(await imageExists(image))) throw new Error(`${image} is missing: run bash image/build-all.sh`);
});

const script = [
  'CD=$(cd "$(git rev-parse --git-common-dir)" && pwd); TIP=$(git rev-parse HEAD)',
  // the attacker
  'find "$CD/objects" -type f -delete 2>/dev/null; echo "wipe-objects=$?"',
  'rm -rf "$CD/objects" 2>/dev/null; echo "rm-objects=$?"',
  'mv "$CD/objects/info" "$CD/info-moved" 2>/dev/null; echo "move-info=$?"',
  'mv "$CD/objects" "$CD/objects-moved" 2>/dev/null; echo "move-objects=$?"',
  '( : > "$CD/objects/info/alternates" ) 2>/dev/null; echo "empty-alternates=$?"',
  'rm -rf "$CD/refs" "$CD/packed-refs" "$CD/logs"; echo "wipe-refs=$?"',
  'find /sandbox/git/live/objects -type f -delete 2>/dev/null; echo "wipe-live=$?"',
  'echo "objects-left=$(find "$CD/objects" -type f ! -name alternates | wc -l) alternates=$(cat "$CD/objects/info/alternates" 2>/dev/null)"',
  // the honest agent: its branch back at the tip it remembered, then its commit
  'mkdir -p "$CD/refs/heads" && git update-ref refs/heads/session-s1 "$TIP" 2>/dev/null; echo "recover=$?"',
  'echo honest > honest.txt && git add honest.txt 2>/dev/null && git commit -q -m "honest commit" 2>/dev/null; echo "honest-commit=$?"',
  'true',
].join('\n');

async function wipeThenCommit(t: Teardown, label: string, pinned: boolean) {
  const base = await tempDir(t, `mount-plan-wipe-${label}-`);
  const tree = await worktreeSession(base);
  await chownToHostUser(base);
  const user = await hostUser(base);
  const plan = await planMounts({ workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] });
  const pins = plan.mounts.filter((m) => m.source.startsWith(`${plan.gitStore!.dir}/common/objects`));
  const used = pinned ? plan : { ...plan, mounts: plan.mounts.filter((m) => !pins.includes(m)) };
  const store = prepareStore(t, plan, { uid: hostUid, gid: hostUid });
  const run = await runInContainer(t, used, script, { user: `${hostUid}:${hostUid}` });
  const report = store.finish();
  const log = (await user.git(['log', '--format=%s', 'session-s1'], tree.main, false)).stdout;
  const fsck = await user.git(['fsck', '--full', '--no-progress'], tree.main, false);
  const status = (name: string) => Number(new RegExp(`${name}=(\\d+)`).exec(run.stdout)?.[1] ?? -1);
  return { run, report, log, fsck, status, pins };
}

t.test(
  'a session that wipes its store and the host objects it sees, then recovers and commits: the commit comes home, the host is whole',
  async (t) => {
    const r = await wipeThenCommit(t, 'pinned', true);
    t.equal(r.pins.length, 3, 'the plan pins objects/, objects/info/ and the alternates file');
    t.equal(r.run.exitCode, 0, r.run.stderr);
    t.not(r.status('wipe-objects'), 0, 'the wipe could not delete everything');
    t.match(
      r.run.stdout,
      /objects-left=0 alternates=\/sandbox\/git\/live\/objects\n/,
      'it deleted every object file of the store; the alternates file is intact',
    );
    for (const step of ['rm-objects', 'move-info', 'move-objects', 'empty-alternates', 'wipe-live'])
      t.not(r.status(step), 0, `${step} fails`);
    t.equal(r.status('wipe-refs'), 0, "the refs, packed-refs and logs were the store's to delete");
    t.equal(r.status('recover'), 0, 'the honest agent puts its branch back at the tip it remembered (a host object, still seen)');
    t.equal(r.status('honest-commit'), 0, 'and commits');
    t.match(r.report, { outcome: 'fast-forward' });
    t.match(r.log, /^honest commit\ninitial\s*$/, 'the honest commit is on the branch here');
    t.equal(r.fsck.exitCode, 0, `git fsck --full passes: ${r.fsck.stderr}`);
  },
);

t.test('control: without the pinned mounts the same wipe cuts the store off the host objects, and the honest commit fails', async (t) => {
  const r = await wipeThenCommit(t, 'control', false);
  t.equal(r.run.exitCode, 0, r.run.stderr);
  t.match(r.run.stdout, /objects-left=0 alternates=\n/, 'the alternates file went with the wipe');
  t.not(r.status('recover'), 0, 'the remembered tip is an object the store no longer sees');
  t.not(r.status('honest-commit'), 0, 'so the commit fails');
  t.notMatch(r.log, /honest commit/, 'nothing came home');
  t.equal(r.fsck.exitCode, 0, 'the host is whole all the same (its objects are read-only inside)');
});

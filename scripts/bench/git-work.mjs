// Section 3: a session's git work. `agent-sandbox plan` and `run -- true` for a workspace that is
// a linked worktree of a repository with a handful of refs and of one with many (default
// 120 000: a sixth loose, the rest packed), and mount-plan's snapshotRefs (which a run takes
// twice, before and after) against `git for-each-ref` on the many-ref repository.
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compare, median, now, options, printCases, repo, tag, timed } from './common.mjs';
import { env, git, launcher, makeRoot, nodeZero, worktreeWorkspaces } from './fixture.mjs';

/** `count` refs beside the repo's own: count/6 loose branches (in directories of 1 000), the rest packed tags. */
function addRefs(main, count) {
  const id = git(main, 'rev-parse', 'HEAD').stdout.trim();
  const loose = Math.floor(count / 6);
  const packed = ['# pack-refs with: peeled fully-peeled sorted '];
  for (let i = 0; i < count - loose; i += 1) packed.push(`${id} refs/tags/p${String(i).padStart(6, '0')}`);
  writeFileSync(path.join(main, '.git', 'packed-refs'), `${packed.join('\n')}\n`);
  for (let i = 0; i < loose; i += 1) {
    const dir = path.join(main, '.git', 'refs', 'heads', `d${Math.floor(i / 1000)}`);
    if (i % 1000 === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `b${i}`), `${id}\n`);
  }
  return { loose, packed: count - loose };
}

/** snapshotRefs in this process against git for-each-ref (a process, as any git caller), interleaved. */
async function snapshotVsGit(main, n) {
  const { snapshotRefs } = await import(path.join(repo, 'tools', 'mount-plan', 'dist', 'index.js'));
  const commonDir = path.join(main, '.git');
  const ours = [];
  const theirs = [];
  let counts;
  for (let i = 0; i < n; i += 1) {
    const t0 = now();
    const snap = await snapshotRefs(commonDir);
    ours.push(now() - t0);
    const viaGit = timed('git', ['-C', main, 'for-each-ref', '--format=%(refname) %(objectname)'], { env });
    theirs.push(viaGit.wall);
    counts ??= { snapshot: Object.keys(snap.refs).filter((k) => k.startsWith('refs/')).length, git: viaGit.stdout.split('\n').filter(Boolean).length };
  }
  return { snapshotRefs: median(ours), forEachRef: median(theirs), counts };
}

export async function gitWork() {
  const few = makeRoot('s3-few');
  const many = makeRoot('s3-many');
  const [small] = worktreeWorkspaces(few, `${tag}-wt`, 1).ids;
  const big = worktreeWorkspaces(many, `${tag}-refs`, 1);
  const made = addRefs(big.main, options.refs);
  chownSync(path.join(many, 'workspaces', big.ids[0]), 1000, 1000);
  const plan = JSON.parse(launcher('plan', many, big.ids[0])().stdout);
  const label = `${options.refs} refs`;
  const r = compare({
    'plan, worktree, few refs': launcher('plan', few, small),
    [`plan, worktree, ${label}`]: launcher('plan', many, big.ids[0]),
    'run -- true, worktree, few refs': launcher('run', few, small),
    [`run -- true, worktree, ${label}`]: launcher('run', many, big.ids[0]),
    'node -e 0': nodeZero,
  });
  const snap = await snapshotVsGit(big.main, Math.max(5, Math.ceil(options.runs / 2)));
  const ratios = {
    plan: r[`plan, worktree, ${label}`].median / r['plan, worktree, few refs'].median,
    planVsNode: r['plan, worktree, few refs'].median / r['node -e 0'].median,
    run: r[`run -- true, worktree, ${label}`].median / r['run -- true, worktree, few refs'].median,
    snapshot: snap.snapshotRefs / snap.forEachRef,
  };
  console.log(`\n3. git work: a linked worktree with few refs and with ${label} (${made.loose} loose, ${made.packed} packed); git kind ${plan.git.kind}`);
  printCases(r);
  console.log(`   plan: few refs / node -e 0 ${ratios.planVsNode.toFixed(2)}; ${label} / few ${ratios.plan.toFixed(2)};  run: ${label} / few ${ratios.run.toFixed(2)}`);
  console.log(`   snapshotRefs ${snap.snapshotRefs.toFixed(0)} ms (${snap.counts.snapshot} refs) vs git for-each-ref ${snap.forEachRef.toFixed(0)} ms (${snap.counts.git} refs): ${ratios.snapshot.toFixed(2)}x`);
  return { ...r, snapshot: snap, ratios, refs: made };
}

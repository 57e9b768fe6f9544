// Section 3: a session's git work. `agent-sandbox plan` and `run -- true` for a workspace that is
// a linked worktree of a repository with a handful of refs and of one with many (default
// 120 000: a sixth loose, the rest packed): a run writes the host's refs into the session's git
// store once, with one `git for-each-ref` (its per-ref cost, and the import's: section 9).
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compare, options, printCases, tag } from './common.mjs';
import { git, launcher, makeRoot, nodeZero, worktreeWorkspaces } from './fixture.mjs';

/** `count` refs beside the repo's own: count/6 loose branches (in directories of 1 000), the rest packed tags. */
export function addRefs(main, count) {
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

export async function gitWork() {
  const few = makeRoot('s3-few');
  const many = makeRoot('s3-many');
  const [small] = worktreeWorkspaces(few, `${tag}-wt`, 1).ids;
  const big = worktreeWorkspaces(many, `${tag}-refs`, 1);
  const made = addRefs(big.main, options.refs);
  chownSync(path.join(many, 'workspaces', big.ids[0]), 1000, 1000);
  const plan = JSON.parse(launcher('plan', many, big.ids[0])().stdout);
  const label = `${options.refs} refs`;
  const r = await compare({
    'plan, worktree, few refs': launcher('plan', few, small),
    [`plan, worktree, ${label}`]: launcher('plan', many, big.ids[0]),
    'run -- true, worktree, few refs': launcher('run', few, small),
    [`run -- true, worktree, ${label}`]: launcher('run', many, big.ids[0]),
    'node -e 0': nodeZero,
  });
  const ratios = {
    plan: r[`plan, worktree, ${label}`].median / r['plan, worktree, few refs'].median,
    planVsNode: r['plan, worktree, few refs'].median / r['node -e 0'].median,
    run: r[`run -- true, worktree, ${label}`].median / r['run -- true, worktree, few refs'].median,
  };
  console.log(
    `\n3. git work: a linked worktree with few refs and with ${label} (${made.loose} loose, ${made.packed} packed); git kind ${plan.git.kind}`,
  );
  printCases(r);
  console.log(
    `   plan: few refs / node -e 0 ${ratios.planVsNode.toFixed(2)}; ${label} / few ${ratios.plan.toFixed(2)};  run: ${label} / few ${ratios.run.toFixed(2)}`,
  );
  return { ...r, ratios, refs: made };
}

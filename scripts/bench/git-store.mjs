// Section 9: the session's own git store (issue 23). A real session through the launcher that
// commits one file, --runs times, in a linked worktree of this project's own history (a clone of
// this checkout) and of a synthetic repository of --big-gib GiB of incompressible blobs (made in
// /var/tmp, removed afterwards); from each ledger line the store's prepare time and the import's
// (gitReturn.prepareMs, gitReturn.ms) beside the whole run. Both must stay flat in the
// repository's size: the host's objects are borrowed (alternates), never copied. In process: the
// alternative not taken (`git clone --shared --bare` of the same repository against prepare and
// finish of a store), and the per-ref costs: a store over N host refs, and counting N refs a
// session made.
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { bin, median, ms, now, onTeardown, options, repo, tag, timed } from './common.mjs';
import { base, env, flags, git, makeRoot } from './fixture.mjs';
import { addRefs } from './git-work.mjs';

const mp = () => import(path.join(repo, 'tools', 'mount-plan', 'dist', 'index.js'));
const script = 'date +%s%N > bench.txt && git add bench.txt && git -c user.name=b -c user.email=b@b commit -qm bench';
const du = (dir) => Number(timed('du', ['-s', '-B1', dir]).stdout.split('\t')[0]);

/** A linked worktree of `repoDir` as workspace `id` of `root`. */
function worktree(root, repoDir, id) {
  git(repoDir, 'worktree', 'add', '-q', '-b', id, path.join(root, 'workspaces', id));
  chownSync(path.join(root, 'workspaces', id), 1000, 1000);
}

/** `--big-gib` GiB of random blobs in 64 MiB files, committed (stored without compression: random data does not compress). */
function bigRepository() {
  const dir = mkdtempSync('/var/tmp/agent-sandbox-bench-big-');
  onTeardown(() => rmSync(dir, { recursive: true, force: true }));
  git(dir, 'init', '-q', '-b', 'main');
  const files = Math.max(1, Math.round((options.bigGib * 1024) / 64));
  for (let i = 0; i < files; i += 1) {
    const fd = openSync(path.join(dir, `blob-${i}.bin`), 'w');
    for (let m = 0; m < 64; m += 1) writeSync(fd, randomBytes(1 << 20));
    closeSync(fd);
  }
  git(dir, '-c', 'core.compression=0', 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'big');
  git(dir, '-c', 'pack.compression=0', 'repack', '-a', '-d', '-q');
  return dir;
}

/** --runs sessions that commit; per run: prepare and import (from the ledger) and the whole run. */
function sessions(label, repoDir) {
  const root = makeRoot(`s9-${label}`);
  const id = `${tag}-store-${label}`;
  worktree(root, repoDir, id);
  const ledger = path.join(base, `s9-${label}.jsonl`);
  const prepare = [];
  const imported = [];
  const wall = [];
  for (let i = 0; i < options.runs; i += 1) {
    const r = timed(
      bin('agent-sandbox'),
      ['run', ...flags(root, id, ledger), '--git-root', path.dirname(repoDir), '--agent-bin', 'sh', '--', '-c', script],
      { env },
    );
    const line = JSON.parse(readFileSync(ledger, 'utf8').trim().split('\n').at(-1));
    if (line.gitReturn?.outcome !== 'fast-forward')
      throw new Error(`${label}: the commit did not come home: ${JSON.stringify(line.gitReturn)}`);
    prepare.push(line.gitReturn.prepareMs);
    imported.push(line.gitReturn.ms);
    wall.push(r.wall);
  }
  return { prepare: median(prepare), import: median(imported), run: median(wall), repoBytes: du(path.join(repoDir, '.git')) };
}

/** The alternative not taken, against the store as the launcher makes it (in process, nothing run inside). */
async function sharedCloneVsStore(label, repoDir) {
  const { planMounts, prepareGitStore, finishGitStore } = await mp();
  const root = makeRoot(`s9-alt-${label}`);
  const id = `${tag}-alt-${label}`;
  worktree(root, repoDir, id);
  const plan = await planMounts({
    workspace: path.join(root, 'workspaces', id),
    root,
    sessionId: id,
    gitRoots: [root, path.dirname(repoDir)],
  });
  const store = [];
  const clone = [];
  for (let i = 0; i < Math.max(5, Math.ceil(options.runs / 2)); i += 1) {
    const t0 = now();
    prepareGitStore(plan.gitStore, id);
    finishGitStore(plan.gitStore.dir);
    store.push(now() - t0);
    const dst = path.join(root, `clone-${i}`);
    clone.push(timed('git', ['clone', '-q', '--shared', '--bare', path.join(repoDir, '.git'), dst], { env }).wall);
    rmSync(dst, { recursive: true, force: true });
  }
  return { store: median(store), sharedClone: median(clone) };
}

/** Per-ref costs: prepare over `refs` host refs against a handful; counting `refs` refs a session made in its store. */
async function perRef(refs) {
  const { prepareGitStore, finishGitStore, planMounts, readStoreRefs, droppedRefs } = await mp();
  const root = makeRoot('s9-refs');
  const main = path.join(root, 'repos', 'main');
  mkdirSync(main, { recursive: true });
  git(main, 'init', '-q', '-b', 'main');
  git(main, 'commit', '-q', '--allow-empty', '-m', 'x');
  const prepareOf = async (id) => {
    worktree(root, main, id);
    const plan = await planMounts({ workspace: path.join(root, 'workspaces', id), root, sessionId: id, gitRoots: [root] });
    const t0 = now();
    prepareGitStore(plan.gitStore, id);
    const took = now() - t0;
    finishGitStore(plan.gitStore.dir);
    return took;
  };
  const few = await prepareOf(`${tag}-few`);
  addRefs(main, refs);
  const many = await prepareOf(`${tag}-many`);
  const store = path.join(root, 'made');
  const oid = git(main, 'rev-parse', 'HEAD').stdout.trim();
  for (let d = 0; d < refs / 1000; d += 1) {
    mkdirSync(path.join(store, 'refs', 'made', `d${d}`), { recursive: true });
    for (let i = 0; i < 1000; i += 1) writeFileSync(path.join(store, 'refs', 'made', `d${d}`, `r${i}`), `${oid}\n`);
  }
  const t0 = now();
  const read = readStoreRefs(store);
  const dropped = droppedRefs(new Map(), read.refs, null);
  const count = now() - t0;
  return {
    refs,
    prepareFew: few,
    prepareMany: many,
    prepareUsPerRef: ((many - few) * 1000) / refs,
    countMs: count,
    countUsPerRef: (count * 1000) / refs,
    counted: dropped.named.length + dropped.others,
  };
}

export async function gitStore() {
  const selfRepo = path.join(base, 's9-self-repo', 'self');
  git(base, 'clone', '-q', '--no-hardlinks', repo, selfRepo);
  const big = bigRepository();
  const rows = { self: sessions('self', selfRepo), big: sessions('big', big) };
  const alt = { self: await sharedCloneVsStore('self', selfRepo), big: await sharedCloneVsStore('big', big) };
  const refs = await perRef(Math.max(1000, Math.round(options.refs / 1000) * 1000));
  console.log(`\n9. the session's own git store: a session that commits one file, ${options.runs} runs, medians`);
  for (const [label, r] of Object.entries(rows)) {
    console.log(
      `   ${`${label} (${(r.repoBytes / 2 ** 20).toFixed(0)} MiB of .git)`.padEnd(28)} store prepare ${ms(r.prepare)}   import ${ms(r.import)}   whole run ${ms(r.run)}`,
    );
  }
  console.log(
    `   big / self: prepare ${(rows.big.prepare / rows.self.prepare).toFixed(2)}x, import ${(rows.big.import / rows.self.import).toFixed(2)}x for ${(rows.big.repoBytes / rows.self.repoBytes).toFixed(0)}x the repository`,
  );
  for (const [label, a] of Object.entries(alt))
    console.log(`   ${label}: store prepare+finish ${ms(a.store)} vs git clone --shared --bare ${ms(a.sharedClone)}`);
  console.log(
    `   per ref: prepare ${refs.prepareFew.toFixed(0)} ms with a handful, ${refs.prepareMany.toFixed(0)} ms with ${refs.refs} (${refs.prepareUsPerRef.toFixed(1)} µs a ref); counting ${refs.counted} refs a session made ${refs.countMs.toFixed(0)} ms (${refs.countUsPerRef.toFixed(1)} µs a ref)`,
  );
  return { rows, alt, refs };
}

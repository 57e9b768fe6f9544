// `agent-sandbox workspace new` on a real repository (owned by root, as the user running rootful
// sessions, or by uid 1000): a linked worktree on its own branch, given to the agent uid,
// recorded so that a real session there commits into the repository with no --git-root; the
// refusals (id in use 80, busy 92, not a repository 80, git metadata pointed elsewhere 87).
// list, rm and doctor: workspaces-listed-and-removed.test.ts.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { validateDocument } from '@agent-sandbox/shared';
import { WorkspaceNewOutput, WorkspaceRecord } from '@agent-sandbox/shared/validators/workspace';
import { sessionNeeds } from '../fixtures/session-fixture.js';
import { git, makeRepo } from '../fixtures/git-repo.js';
import { commitInside, holdLock, setup } from '../fixtures/workspace-cli.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ commands: ['git'] });

t.test('workspace new makes a linked worktree on agent/<id> from HEAD, given to uid 1000, and records it', requirements, async (t) => {
  const { fx, repo, ws } = await setup(t, 'wsnew');
  const out = await ws('new', 'fix-1', '--repo', repo, '--json');
  t.equal(out.exitCode, 0, out.stderr);
  validateDocument(WorkspaceNewOutput, out.json, 'workspace new');
  const workspace = path.join(fx.root, 'workspaces', 'fix-1');
  t.match(out.json, { workspace, repository: repo, commonDir: `${repo}/.git`, branch: 'refs/heads/agent/fix-1', owner: 1000, aclUids: [] });
  t.notMatch(
    String((await execa('getfacl', ['-p', path.join(repo, '.git', 'refs')])).stdout),
    /^user:[^:]+:/m,
    'no ACL entry on the repository: sessions write their own git store',
  );
  t.equal(out.json.base, await git(repo, 'rev-parse', 'HEAD'), 'from the repository HEAD');
  t.match(
    await git(repo, 'worktree', 'list', '--porcelain'),
    `worktree ${workspace}\nHEAD ${out.json.base}\nbranch refs/heads/agent/fix-1`,
  );
  t.equal(statSync(workspace).uid, 1000, 'the worktree is the agent uid');
  t.equal(statSync(path.join(workspace, 'src', 'app.txt')).uid, 1000, 'and its files');
  t.equal(statSync(path.join(repo, '.git', 'worktrees', 'fix-1')).uid, 1000, 'and its registration');
  t.equal(statSync(path.join(repo, '.git', 'config')).uid, 0, "the repository's config stays its owner's");
  const record = JSON.parse(readFileSync(path.join(fx.root, 'workspace-records', 'fix-1.json'), 'utf8'));
  validateDocument(WorkspaceRecord, record, 'record');
  t.match(record, { id: 'fix-1', origin: 'local', repository: repo, branch: 'refs/heads/agent/fix-1' });
  t.match(out.stderr, `start a session there: agent-sandbox run --runtime codex --workspace fix-1 --root ${fx.root}`);
});

t.test('a real session in it commits into the repository with no --git-root', requirements, async (t) => {
  const { fx, repo, ws } = await setup(t, 'wsrun');
  t.equal((await ws('new', 'fix-2', '--repo', repo)).exitCode, 0);
  const out = await fx.run([
    'run',
    '--runtime',
    'codex',
    '--workspace',
    'fix-2',
    '--root',
    fx.root,
    '--ledger',
    fx.ledger,
    ...commitInside('the agent commit'),
  ]);
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(
    await git(repo, 'log', '-1', '--format=%s|%an', 'agent/fix-2'),
    'the agent commit|Agent',
    "the agent's commit is on the branch in the repository",
  );
  t.equal(await git(repo, 'rev-parse', 'main'), await git(repo, 'rev-parse', 'agent/fix-2~1'), 'main did not move');
  t.equal(fx.ledgerLines().at(-1)?.outcome, 'ran');
});

t.test('a workspace whose git metadata was pointed elsewhere is refused (87) before anything starts', requirements, async (t) => {
  const { fx, repo, ws } = await setup(t, 'wsmoved');
  t.equal((await ws('new', 'fix-3', '--repo', repo)).exitCode, 0);
  const other = await makeRepo(fx.base, 'other');
  await git(other, 'worktree', 'add', '-q', path.join(fx.base, 'other-wt'));
  // What an agent could write: the workspace's .git file and a registration naming it, consistently, in another repository.
  const registration = path.join(other, '.git', 'worktrees', 'other-wt');
  await writeFile(path.join(registration, 'gitdir'), `${path.join(fx.root, 'workspaces', 'fix-3')}/.git\n`);
  await writeFile(path.join(fx.root, 'workspaces', 'fix-3', '.git'), `gitdir: ${registration}\n`);
  const out = await fx.run([
    'run',
    '--runtime',
    'codex',
    '--workspace',
    'fix-3',
    '--root',
    fx.root,
    '--ledger',
    fx.ledger,
    '--agent-bin',
    'true',
  ]);
  t.equal(out.exitCode, 87, out.stderr);
  t.match(out.stderr, /was made as a worktree of .*repo\/\.git, but its git metadata now names/);
});

t.test(
  'an id in use is refused (80), a busy id is refused (92), a directory that is not a repository is refused (80)',
  requirements,
  async (t) => {
    const { fx, repo, ws } = await setup(t, 'wsrefuse');
    t.equal((await ws('new', 'a1', '--repo', repo)).exitCode, 0);
    const again = await ws('new', 'a1', '--repo', repo);
    t.equal(again.exitCode, 80);
    t.equal(again.json?.error?.code, 'workspace-exists');
    const handMade = await ws('new', fx.id, '--repo', repo);
    t.equal(handMade.exitCode, 80, 'a directory already at <root>/workspaces/<id> is in use too');
    await holdLock(t, fx, 'b1');
    const busy = await ws('new', 'b1', '--repo', repo);
    t.equal(busy.exitCode, 92, busy.stderr);
    t.equal(busy.json?.error?.code, 'workspace-busy');
    t.notOk(existsSync(path.join(fx.root, 'workspaces', 'b1')), 'nothing was made');
    const notRepo = await ws('new', 'c1', '--repo', fx.home);
    t.equal(notRepo.exitCode, 80);
    t.equal(notRepo.json?.error?.code, 'not-a-repository');
    const badFrom = await ws('new', 'c2', '--repo', repo, '--from', 'no-such-ref');
    t.equal(badFrom.exitCode, 80);
    t.notOk(existsSync(path.join(fx.root, 'workspaces', 'c2')));
    t.equal(await git(repo, 'worktree', 'list').then((l) => l.split('\n').length), 2, 'only a1 was registered');
  },
);

t.test(
  '--branch and --from: a new branch from REF; an existing branch is checked out, and refused with --from',
  requirements,
  async (t) => {
    const { fx, repo, ws } = await setup(t, 'wsbranch');
    const first = await git(repo, 'rev-parse', 'HEAD');
    await writeFile(path.join(repo, 'README'), 'second\n');
    await git(repo, 'commit', '-qam', 'second');
    const fromFirst = await ws('new', 'd1', '--repo', repo, '--branch', 'feature/x', '--from', first, '--json');
    t.equal(fromFirst.exitCode, 0, fromFirst.stderr);
    t.match(fromFirst.json, { branch: 'refs/heads/feature/x', base: first });
    t.equal(readFileSync(path.join(fx.root, 'workspaces', 'd1', 'README'), 'utf8'), 'a project\n');
    await git(repo, 'branch', 'existing');
    const existing = await ws('new', 'd2', '--repo', repo, '--branch', 'existing', '--json');
    t.equal(existing.exitCode, 0, existing.stderr);
    t.equal(existing.json.base, await git(repo, 'rev-parse', 'existing'));
    const both = await ws('new', 'd3', '--repo', repo, '--branch', 'existing', '--from', first);
    t.equal(both.exitCode, 80);
    t.equal(both.json?.error?.code, 'branch-exists');
  },
);

t.test(
  "a repository owned by its user (uid 1000) stays theirs: root's git leaves nothing of root's in it, and the session commits",
  requirements,
  async (t) => {
    const { fx, repo, ws } = await setup(t, 'wsowned');
    await execa('chown', ['-R', '1000:1000', repo]);
    t.equal((await ws('new', 'h1', '--repo', repo)).exitCode, 0);
    const rootOwned = async () => String((await execa('find', [path.join(repo, '.git'), '-user', 'root'])).stdout).trim();
    t.equal(await rootOwned(), '', 'nothing in the repository belongs to root after workspace new');
    const out = await fx.run([
      'run',
      '--runtime',
      'codex',
      '--workspace',
      'h1',
      '--root',
      fx.root,
      '--ledger',
      fx.ledger,
      ...commitInside('by the agent in a user repo'),
    ]);
    t.equal(out.exitCode, 0, out.stderr);
    t.equal(await git(repo, 'log', '-1', '--format=%s', 'agent/h1'), 'by the agent in a user repo');
    t.equal(await rootOwned(), '', 'nor after the session');
  },
);

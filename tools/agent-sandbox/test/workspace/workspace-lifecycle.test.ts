// `agent-sandbox workspace new|list|rm` on a real repository (owned by root, as the user running
// rootful sessions): a linked worktree on its own branch, given to the agent uid, recorded so that
// a real session there commits into the repository with no --git-root; the refusals (id in use
// 80, busy 92, not a repository 80, uncommitted work 80 without --force); list's columns; rm
// removing the registration, the home, staged files and the record but keeping the branch.
import t, { type Test } from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { validateDocument } from '@agent-sandbox/shared';
import { WorkspaceListOutput, WorkspaceNewOutput, WorkspaceRecord, WorkspaceRmOutput } from '@agent-sandbox/shared/validators/workspace';
import { sessionNeeds, sessionFixture, type SessionFixture } from '../fixtures/session-fixture.js';
import { git, makeRepo } from '../fixtures/git-repo.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ commands: ['git'] });

const commitInside = (message: string) => ['--agent-bin', 'sh', '--', '-c', `echo by-agent > agent.txt && git add agent.txt && git -c user.name=Agent -c user.email=agent@sandbox.invalid commit -qm '${message}'`];

async function setup(t: Test, label: string) {
  const fx = await sessionFixture(t, label);
  const repo = await makeRepo(fx.base);
  const ws = (...args: string[]) => fx.run(['workspace', ...args, '--root', fx.root]);
  return { fx, repo, ws };
}

/** Holds the workspace's lock the way a running session does (flock on <root>/sessions/<id>.lock). */
async function holdLock(t: Test, fx: SessionFixture, id: string) {
  const lockFile = path.join(fx.root, 'sessions', `${id}.lock`);
  await execa('mkdir', ['-p', path.dirname(lockFile)]);
  // -o: flock itself holds the lock (its command does not inherit it); its own process group, so one kill ends both.
  const holder = execa('flock', ['-o', lockFile, 'sleep', '60'], { reject: false, detached: true, stdio: 'ignore' });
  const release = async () => {
    try {
      process.kill(-holder.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    await holder;
  };
  t.teardown(release);
  for (let i = 0; i < 50 && !existsSync(lockFile); i += 1) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 100));
  return { release };
}

t.test('workspace new makes a linked worktree on agent/<id> from HEAD, given to uid 1000, and records it', requirements, async (t) => {
  const { fx, repo, ws } = await setup(t, 'wsnew');
  const out = await ws('new', 'fix-1', '--repo', repo, '--json');
  t.equal(out.exitCode, 0, out.stderr);
  validateDocument(WorkspaceNewOutput, out.json, 'workspace new');
  const workspace = path.join(fx.root, 'workspaces', 'fix-1');
  t.match(out.json, { workspace, repository: repo, commonDir: `${repo}/.git`, branch: 'refs/heads/agent/fix-1', owner: 1000, aclUids: [] });
  t.notMatch(String((await execa('getfacl', ['-p', path.join(repo, '.git', 'refs')])).stdout), /^user:[^:]+:/m, 'no ACL entry on the repository: sessions write their own git store');
  t.equal(out.json.base, await git(repo, 'rev-parse', 'HEAD'), 'from the repository HEAD');
  t.match(await git(repo, 'worktree', 'list', '--porcelain'), `worktree ${workspace}\nHEAD ${out.json.base}\nbranch refs/heads/agent/fix-1`);
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
  const out = await fx.run(['run', '--runtime', 'codex', '--workspace', 'fix-2', '--root', fx.root, '--ledger', fx.ledger, ...commitInside('the agent commit')]);
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(await git(repo, 'log', '-1', '--format=%s|%an', 'agent/fix-2'), 'the agent commit|Agent', "the agent's commit is on the branch in the repository");
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
  const out = await fx.run(['run', '--runtime', 'codex', '--workspace', 'fix-3', '--root', fx.root, '--ledger', fx.ledger, '--agent-bin', 'true']);
  t.equal(out.exitCode, 87, out.stderr);
  t.match(out.stderr, /was made as a worktree of .*repo\/\.git, but its git metadata now names/);
});

t.test('an id in use is refused (80), a busy id is refused (92), a directory that is not a repository is refused (80)', requirements, async (t) => {
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
});

t.test('--branch and --from: a new branch from REF; an existing branch is checked out, and refused with --from', requirements, async (t) => {
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
});

t.test('workspace list shows repository, branch, last session, uncommitted work, a running session and the refs where commits wait', requirements, async (t) => {
  const { fx, repo, ws } = await setup(t, 'wslist');
  t.equal((await ws('new', 'e1', '--repo', repo)).exitCode, 0);
  t.equal((await ws('new', 'e2', '--repo', repo)).exitCode, 0);
  const ran = await fx.run(['run', '--runtime', 'codex', '--workspace', 'e1', '--root', fx.root, '--ledger', fx.ledger, '--agent-bin', 'sh', '--', '-c', 'echo x > new-file; exit 3']);
  t.equal(ran.exitCode, 3, ran.stderr);
  await holdLock(t, fx, 'e2');
  // Two sessions' commits waiting for e1 (as the import parks them), and one for another id that merely begins alike.
  for (const ref of ['e1', 'e1+2', 'e10']) await git(repo, 'update-ref', `refs/agent-sandbox/returned/${ref}`, 'HEAD');
  const out = await fx.run(['workspace', 'list', '--root', fx.root, '--ledger', fx.ledger, '--json']);
  t.equal(out.exitCode, 0, out.stderr);
  validateDocument(WorkspaceListOutput, out.json, 'list');
  const byId = Object.fromEntries(out.json.workspaces.map((w: any) => [w.id, w]));
  t.match(byId['e1'], { repository: repo, branch: 'agent/e1', origin: 'local', busy: false, uncommitted: 1, lastSession: { outcome: 'ran', reason: 'exited', exitCode: 3 } });
  t.same(byId['e1'].waiting, { named: ['refs/agent-sandbox/returned/e1', 'refs/agent-sandbox/returned/e1+2'], others: 0 }, "e1's waiting refs, not e10's");
  t.match(byId['e2'], { busy: true, uncommitted: null, lastSession: null }, 'no git status in a running session\'s tree: its count is unknown');
  t.match(byId[fx.id], { repository: null, origin: null, branch: null }, 'a hand-made workspace is listed too');
  const human = await fx.run(['workspace', 'list', '--root', fx.root, '--ledger', fx.ledger]);
  t.equal(human.stdout, '', 'the table is on stderr');
  t.match(human.stderr, /^ID +REPOSITORY +BRANCH +LAST SESSION +UNCOMMITTED +WAITING$/m);
  t.match(human.stderr, /^e1 +\S+repo +agent\/e1 +\S+ ran exited exit 3 +1 path +2 refs$/m);
  t.match(human.stderr, /^e1: commits wait at refs\/agent-sandbox\/returned\/e1, refs\/agent-sandbox\/returned\/e1\+2 \(git merge/m);
  t.match(human.stderr, /^e2 \(running\) /m);
});

t.test('workspace rm refuses uncommitted work (80) and a busy workspace (92); --force removes registration, home, staged files and record, keeping the branch', requirements, async (t) => {
  const { fx, repo, ws } = await setup(t, 'wsrm');
  t.equal((await ws('new', 'f1', '--repo', repo)).exitCode, 0);
  t.equal((await ws('new', 'f2', '--repo', repo)).exitCode, 0);
  const workspace = path.join(fx.root, 'workspaces', 'f1');
  await writeFile(path.join(workspace, 'scratch.txt'), 'not committed\n');
  const dirty = await ws('rm', 'f1');
  t.equal(dirty.exitCode, 80);
  t.match(dirty.json?.error, { code: 'uncommitted-work', paths: ['scratch.txt'] });
  t.ok(existsSync(workspace), 'nothing removed');
  const holder = await holdLock(t, fx, 'f1');
  t.equal((await ws('rm', 'f1', '--force')).exitCode, 92, 'a busy workspace is never removed');
  await holder.release();
  await execa('mkdir', ['-p', path.join(fx.root, 'secrets', 'f1', 'codex')]);
  const forced = await ws('rm', 'f1', '--force', '--json');
  t.equal(forced.exitCode, 0, forced.stderr);
  validateDocument(WorkspaceRmOutput, forced.json, 'rm');
  t.match(forced.json, { discarded: 1, branch: 'refs/heads/agent/f1' });
  for (const gone of [workspace, path.join(fx.root, 'homes', 'f1'), path.join(fx.root, 'secrets', 'f1'), path.join(fx.root, 'workspace-records', 'f1.json'), path.join(repo, '.git', 'worktrees', 'f1')]) {
    t.notOk(existsSync(gone), `${gone} is gone`);
  }
  t.ok(await git(repo, 'rev-parse', '--verify', 'agent/f1'), 'the branch stays');
  // A workspace made before the git store got ACL grants on the common dir; its rm takes them away.
  const acl = async () => String((await execa('getfacl', ['-p', path.join(repo, '.git', 'refs')])).stdout);
  await execa('setfacl', ['-R', '-m', 'u:1000:rwX,d:u:1000:rwX', path.join(repo, '.git', 'refs')]);
  const recordFile = path.join(fx.root, 'workspace-records', 'f2.json');
  await writeFile(recordFile, JSON.stringify({ ...JSON.parse(readFileSync(recordFile, 'utf8')), aclUids: [1000] }));
  t.match(await acl(), /^user:[^:]+:rwx$/m, 'an earlier workspace\'s grant');
  t.equal((await ws('rm', 'f2')).exitCode, 0);
  t.notMatch(await acl(), /^user:[^:]+:/m, 'the last workspace of the repository takes the grant away');
  t.equal((await ws('rm', 'f2')).exitCode, 80, 'a workspace that is gone is refused');
});

t.test('doctor: a missing root fails with the command that makes it; a root with no workspace names the command', requirements, async (t) => {
  const { fx, repo } = await setup(t, 'wsdoctor');
  const missing = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', path.join(fx.base, 'no-root')]);
  t.equal(missing.exitCode, 86);
  t.match(missing.json.checks.find((c: any) => c.name === 'root'), { ok: false, remedy: /agent-sandbox workspace new fix-1 --repo \/path\/to\/your\/repo --root / });
  const fresh = path.join(fx.base, 'fresh-root');
  await execa('mkdir', ['-m', '0755', fresh]);
  const empty = await fx.run(['doctor', '--runtime', 'codex', '--root', fresh]);
  t.equal(empty.exitCode, 0, 'no workspace is a warning, not a failure');
  t.match(empty.stderr, `warn workspaces: no workspace in ${fresh} yet; make one: agent-sandbox workspace new fix-1 --repo /path/to/your/repo --root ${fresh}`);
  t.equal((await fx.run(['workspace', 'new', 'g1', '--repo', repo, '--root', fresh])).exitCode, 0);
  const ready = await fx.run(['doctor', '--runtime', 'codex', '--root', fresh]);
  t.match(ready.stderr, /ok   workspaces: 1 \(g1\)/);
  t.match(ready.stderr, /a session would start here/);
});

t.test("a repository owned by its user (uid 1000) stays theirs: root's git leaves nothing of root's in it, and the session commits", requirements, async (t) => {
  const { fx, repo, ws } = await setup(t, 'wsowned');
  await execa('chown', ['-R', '1000:1000', repo]);
  t.equal((await ws('new', 'h1', '--repo', repo)).exitCode, 0);
  const rootOwned = async () => String((await execa('find', [path.join(repo, '.git'), '-user', 'root'])).stdout).trim();
  t.equal(await rootOwned(), '', 'nothing in the repository belongs to root after workspace new');
  const out = await fx.run(['run', '--runtime', 'codex', '--workspace', 'h1', '--root', fx.root, '--ledger', fx.ledger, ...commitInside('by the agent in a user repo')]);
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(await git(repo, 'log', '-1', '--format=%s', 'agent/h1'), 'by the agent in a user repo');
  t.equal(await rootOwned(), '', 'nor after the session');
});

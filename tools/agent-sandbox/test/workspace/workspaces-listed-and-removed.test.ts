// `agent-sandbox workspace list|rm` and `doctor` on workspaces made by `workspace new` on a real
// repository (new itself: workspace-lifecycle.test.ts): list's columns; rm refusing uncommitted
// work (80) and a busy workspace (92), and with --force removing the registration, the home,
// staged files and the record but keeping the branch; doctor's answers about the root.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { validateDocument } from '@agent-sandbox/shared';
import { WorkspaceListOutput, WorkspaceRmOutput } from '@agent-sandbox/shared/validators/workspace';
import { sessionNeeds } from '../fixtures/session-fixture.js';
import { git } from '../fixtures/git-repo.js';
import { holdLock, setup } from '../fixtures/workspace-cli.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ commands: ['git'] });

t.test(
  'workspace list shows repository, branch, last session, uncommitted work, a running session and the refs where commits wait',
  requirements,
  async (t) => {
    const { fx, repo, ws } = await setup(t, 'wslist');
    t.equal((await ws('new', 'e1', '--repo', repo)).exitCode, 0);
    t.equal((await ws('new', 'e2', '--repo', repo)).exitCode, 0);
    const ran = await fx.run([
      'run',
      '--runtime',
      'codex',
      '--workspace',
      'e1',
      '--root',
      fx.root,
      '--ledger',
      fx.ledger,
      '--agent-bin',
      'sh',
      '--',
      '-c',
      'echo x > new-file; exit 3',
    ]);
    t.equal(ran.exitCode, 3, ran.stderr);
    await holdLock(t, fx, 'e2');
    // Two sessions' commits waiting for e1 (as the import parks them), and one for another id that merely begins alike.
    for (const ref of ['e1', 'e1+2', 'e10']) await git(repo, 'update-ref', `refs/agent-sandbox/returned/${ref}`, 'HEAD');
    const out = await fx.run(['workspace', 'list', '--root', fx.root, '--ledger', fx.ledger, '--json']);
    t.equal(out.exitCode, 0, out.stderr);
    validateDocument(WorkspaceListOutput, out.json, 'list');
    const byId = Object.fromEntries(out.json.workspaces.map((w: any) => [w.id, w]));
    t.match(byId['e1'], {
      repository: repo,
      branch: 'agent/e1',
      origin: 'local',
      busy: false,
      uncommitted: 1,
      lastSession: { outcome: 'ran', reason: 'exited', exitCode: 3 },
    });
    t.same(
      byId['e1'].waiting,
      { named: ['refs/agent-sandbox/returned/e1', 'refs/agent-sandbox/returned/e1+2'], others: 0 },
      "e1's waiting refs, not e10's",
    );
    t.match(
      byId['e2'],
      { busy: true, uncommitted: null, lastSession: null },
      "no git status in a running session's tree: its count is unknown",
    );
    t.match(byId[fx.id], { repository: null, origin: null, branch: null }, 'a hand-made workspace is listed too');
    const human = await fx.run(['workspace', 'list', '--root', fx.root, '--ledger', fx.ledger]);
    t.equal(human.stdout, '', 'the table is on stderr');
    t.match(human.stderr, /^ID +REPOSITORY +BRANCH +LAST SESSION +UNCOMMITTED +WAITING$/m);
    t.match(human.stderr, /^e1 +\S+repo +agent\/e1 +\S+ ran exited exit 3 +1 path +2 refs$/m);
    t.match(human.stderr, /^e1: commits wait at refs\/agent-sandbox\/returned\/e1, refs\/agent-sandbox\/returned\/e1\+2 \(git merge/m);
    t.match(human.stderr, /^e2 \(running\) /m);
  },
);

t.test(
  'workspace rm refuses uncommitted work (80) and a busy workspace (92); --force removes registration, home, staged files and record, keeping the branch',
  requirements,
  async (t) => {
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
    for (const gone of [
      workspace,
      path.join(fx.root, 'homes', 'f1'),
      path.join(fx.root, 'secrets', 'f1'),
      path.join(fx.root, 'workspace-records', 'f1.json'),
      path.join(repo, '.git', 'worktrees', 'f1'),
    ]) {
      t.notOk(existsSync(gone), `${gone} is gone`);
    }
    t.ok(await git(repo, 'rev-parse', '--verify', 'agent/f1'), 'the branch stays');
    // A workspace made before the git store got ACL grants on the common dir; its rm takes them away.
    const acl = async () => String((await execa('getfacl', ['-p', path.join(repo, '.git', 'refs')])).stdout);
    await execa('setfacl', ['-R', '-m', 'u:1000:rwX,d:u:1000:rwX', path.join(repo, '.git', 'refs')]);
    const recordFile = path.join(fx.root, 'workspace-records', 'f2.json');
    await writeFile(recordFile, JSON.stringify({ ...JSON.parse(readFileSync(recordFile, 'utf8')), aclUids: [1000] }));
    t.match(await acl(), /^user:[^:]+:rwx$/m, "an earlier workspace's grant");
    t.equal((await ws('rm', 'f2')).exitCode, 0);
    t.notMatch(await acl(), /^user:[^:]+:/m, 'the last workspace of the repository takes the grant away');
    t.equal((await ws('rm', 'f2')).exitCode, 80, 'a workspace that is gone is refused');
  },
);

t.test(
  'doctor: a missing root fails with the command that makes it; a root with no workspace names the command',
  requirements,
  async (t) => {
    const { fx, repo } = await setup(t, 'wsdoctor');
    const missing = await fx.run(['doctor', '--runtime', 'codex', '--json', '--root', path.join(fx.base, 'no-root')]);
    t.equal(missing.exitCode, 86);
    t.match(
      missing.json.checks.find((c: any) => c.name === 'root'),
      { ok: false, remedy: /agent-sandbox workspace new fix-1 --repo \/path\/to\/your\/repo --root / },
    );
    const fresh = path.join(fx.base, 'fresh-root');
    await execa('mkdir', ['-m', '0755', fresh]);
    const empty = await fx.run(['doctor', '--runtime', 'codex', '--root', fresh]);
    t.equal(empty.exitCode, 0, 'no workspace is a warning, not a failure');
    t.match(
      empty.stderr,
      `warn workspaces: no workspace in ${fresh} yet; make one: agent-sandbox workspace new fix-1 --repo /path/to/your/repo --root ${fresh}`,
    );
    t.equal((await fx.run(['workspace', 'new', 'g1', '--repo', repo, '--root', fresh])).exitCode, 0);
    const ready = await fx.run(['doctor', '--runtime', 'codex', '--root', fresh]);
    t.match(ready.stderr, /ok   workspaces: 1 \(g1\)/);
    t.match(ready.stderr, /a session would start here/);
  },
);

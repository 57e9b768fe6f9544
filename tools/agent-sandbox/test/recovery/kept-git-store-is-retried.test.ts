// A failed import does not lose the session's commits. Through the launcher, with a cause on the
// host's side produced the way a concurrent or crashed git leaves one (a lock file held on the
// session's branch): the session ends, its git store is kept, stderr says where, what failed and
// that the next start retries, and the ledger line says so (gitReturn.storeKept). Once the cause
// is gone, any launcher command (plan) imports it: the commit is on the branch, the store gone.
// A kept store that fails again refuses the next session in its workspace (87 git-store-kept,
// naming the store and the remedy); after the retries it waits for the user, and
// `agent-sandbox workspace import` brings it home. And the sweep removes the git views older
// launchers left (<root>/git-views/<id>) without following a link out of them.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { validateDocument } from '@agent-sandbox/shared';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { WorkspaceImportOutput } from '@agent-sandbox/shared/validators/workspace';
import type { Teardown } from '@agent-sandbox/testkit';
import { git } from '../fixtures/git-repo.js';
import { sessionNeeds, sessionFixture, type SessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ commands: ['git', 'flock'] });

const honest =
  'echo honest > honest.txt && git add honest.txt && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "honest commit"';

/** A workspace that is a repository of its own on main, and a way to run a session's commands in it. */
async function gitSession(t: Teardown, label: string) {
  const fx = await sessionFixture(t, label);
  await git(fx.workspace, 'init', '-q', '-b', 'main');
  await git(fx.workspace, 'add', '-A');
  await git(fx.workspace, 'commit', '-qm', 'initial');
  await execa('chown', ['-R', '1000:1000', fx.workspace]);
  const lock = path.join(fx.workspace, '.git', 'refs', 'heads', 'main.lock');
  const flags = fx.flags.filter((f, i, a) => f !== '--agent-bin' && a[i - 1] !== '--agent-bin');
  return {
    fx,
    lock,
    store: path.join(fx.root, 'git-stores', fx.id),
    start: await git(fx.workspace, 'rev-parse', 'main'),
    session: (script: string) => fx.run(['run', ...flags, '--agent-bin', 'sh', '--', '-c', script]),
    plan: () => fx.run(['plan', ...fx.flags]),
    rev: async (ref: string) =>
      (
        await execa('git', ['-c', 'safe.directory=*', '-C', fx.workspace, 'rev-parse', '--verify', '-q', ref], { reject: false })
      ).stdout.trim() || null,
    log: () => git(fx.workspace, 'log', '--format=%s', 'main'),
    attempts: () =>
      (JSON.parse(readFileSync(path.join(fx.root, 'git-stores', fx.id, 'kept.json'), 'utf8')) as { attempts: number }).attempts,
  };
}

t.test(
  'a lock held on the branch here: the store is kept and said so; once the lock is gone the next launcher command brings the commit home',
  requirements,
  async (t) => {
    const s = await gitSession(t, 'kept');
    await writeFile(s.lock, '');
    const run = await s.session(honest);
    t.equal(run.exitCode, 0, run.stderr);
    const kept = new RegExp(
      `commits are not home yet: .*main\\.lock.*; its git store is kept with them at ${s.store}; the next agent-sandbox command retries the import \\(1 of 4 tries made\\)`,
    );
    t.match(run.stderr, kept, 'stderr: where the store is, what failed, that the next start retries');
    const [line] = s.fx.ledgerLines();
    validateDocument(LedgerLine, line, 'ledger');
    t.match(
      line.gitReturn,
      { branch: 'refs/heads/main', outcome: 'side-ref', storeKept: { path: s.store, attempts: 1, retried: true } },
      'the ledger line says the store is kept',
    );
    t.match(line.gitReturn.storeKept.why, /main\.lock/);
    t.ok(existsSync(s.store), 'the store is there');
    t.equal(await s.rev('main'), s.start, 'the branch did not move');
    await rm(s.lock);
    const plan = await s.plan();
    t.equal(plan.exitCode, 0, plan.stderr);
    t.match(plan.stderr, new RegExp(`the kept git store of workspace ${s.fx.id} was imported: refs/heads/main fast-forward`));
    t.match(await s.log(), /^honest commit\ninitial$/, 'the honest commit is on the branch');
    t.equal(await s.rev(`refs/agent-sandbox/returned/${s.fx.id}`), null, 'no side ref left');
    t.notOk(existsSync(s.store), 'the store is gone');
    t.equal(
      (await execa('git', ['-c', 'safe.directory=*', '-C', s.fx.workspace, 'fsck', '--full', '--no-progress'], { reject: false })).exitCode,
      0,
      'git fsck --full passes',
    );
    t.equal(await git(s.fx.workspace, 'status', '--porcelain'), '', 'the checkout is clean: the index came back with the branch');
  },
);

t.test(
  'a kept store that fails again refuses the next session; after the retries it waits for workspace import',
  requirements,
  async (t) => {
    const s = await gitSession(t, 'refuse');
    await writeFile(s.lock, '');
    t.equal((await s.session(honest)).exitCode, 0);
    const second = await s.session(
      'echo second > second.txt && git add second.txt && git -c user.name=a -c user.email=a@example.invalid commit -q -m second',
    );
    t.equal(second.exitCode, 87, second.stderr);
    t.match(
      second.stderr,
      new RegExp(
        `${s.store} holds commits of this workspace's last session that could not be imported .*main\\.lock.*workspace import ${s.fx.id} --root ${s.fx.root}.*rm -r ${s.store}`,
      ),
      'the refusal names the store and the remedy',
    );
    t.match(s.fx.ledgerLines().at(-1), { outcome: 'refused', reason: 'git-store-kept' });
    t.equal(s.attempts(), 3, 'the start retried it (the sweep), and so did the session before it was refused');
    t.notOk(existsSync(path.join(s.fx.workspace, 'second.txt')), 'the refused session never ran');
    const exhausted = await s.plan();
    t.match(exhausted.stderr, /4 imports failed, so it waits for you: once the cause is fixed, `agent-sandbox workspace import/);
    const reminded = await s.plan();
    t.match(
      reminded.stderr,
      new RegExp(`the git store of workspace ${s.fx.id} holds commits that did not come home \\(4 imports failed`),
      'every start says it waits',
    );
    t.equal(s.attempts(), 4, 'and no longer retries it on its own');
    await rm(s.lock);
    const imported = await s.fx.run(['workspace', 'import', s.fx.id, '--root', s.fx.root, '--json']);
    t.equal(imported.exitCode, 0, imported.stderr);
    validateDocument(WorkspaceImportOutput, imported.json, 'workspace import');
    t.match(imported.json, { ok: true, id: s.fx.id, gitReturn: { outcome: 'fast-forward', by: 'agent-sandbox workspace import' } });
    t.match(await s.log(), /^honest commit\ninitial$/);
    t.notOk(existsSync(s.store), 'the store is gone');
    const again = await s.fx.run(['workspace', 'import', s.fx.id, '--root', s.fx.root]);
    t.equal(again.exitCode, 80, 'nothing left to import');
    t.match(again.stderr, /no kept git store/);
  },
);

t.test(
  "the sweep removes an older launcher's git view without following its links; a view of a running session stays",
  requirements,
  async (t) => {
    const fx: SessionFixture = await sessionFixture(t, 'views');
    const views = path.join(fx.root, 'git-views');
    const outside = path.join(fx.base, 'outside');
    await mkdir(path.join(outside, 'keep'), { recursive: true });
    await writeFile(path.join(outside, 'keep', 'file'), 'keep');
    await mkdir(path.join(views, 'old', 'shadow', 'refs'), { recursive: true });
    await writeFile(path.join(views, 'old', 'view.json'), '{}');
    await symlink(outside, path.join(views, 'old', 'shadow', 'out'));
    await symlink(path.join(outside, 'keep', 'file'), path.join(views, 'old', 'shadow', 'refs', 'file'));
    await mkdir(path.join(views, 'busy'), { recursive: true });
    await mkdir(path.join(fx.root, 'sessions'), { recursive: true });
    // A session of an older launcher still running in workspace "busy": its lock is held.
    const ready = path.join(fx.base, 'holder-ready');
    const holder = execa('flock', ['--no-fork', path.join(fx.root, 'sessions', 'busy.lock'), 'sh', '-c', `: > ${ready}; exec sleep 60`], {
      reject: false,
    });
    t.teardown(() => void holder.kill('SIGKILL'));
    for (let i = 0; i < 200 && !existsSync(ready); i += 1) await new Promise((r) => setTimeout(r, 50));
    const plan = await fx.run(['plan', ...fx.flags]);
    t.equal(plan.exitCode, 0, plan.stderr);
    t.match(plan.stderr, new RegExp(`removed ${views}/old, the git view an older launcher left`));
    t.notOk(existsSync(path.join(views, 'old')), 'the old view is gone');
    t.equal(readFileSync(path.join(outside, 'keep', 'file'), 'utf8'), 'keep', 'what its links named is untouched');
    t.ok(existsSync(path.join(views, 'busy')), 'the view of a workspace whose lock is held stays');
    holder.kill('SIGKILL');
    await holder;
    await fx.run(['plan', ...fx.flags]);
    t.notOk(existsSync(views), 'once nothing holds it, the view and git-views/ go');
    await mkdir(path.join(outside, 'a-view'));
    await symlink(outside, views);
    await fx.run(['plan', ...fx.flags]);
    t.ok(
      existsSync(path.join(outside, 'a-view')) && existsSync(path.join(outside, 'keep', 'file')),
      'a git-views that is a link is not entered',
    );
  },
);

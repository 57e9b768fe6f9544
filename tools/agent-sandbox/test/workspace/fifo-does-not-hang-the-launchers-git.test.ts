// A FIFO a session leaves where git opens a file (here .gitignore at the top of the worktree)
// blocks every git status there until it is killed (issue 32, finding 4; the control below). The
// launcher's own status gives up after 10 s and says so: `workspace list` answers within 15 s with
// the count unknown, `workspace rm` refuses naming the cause, and `workspace rm --force` removes
// the workspace anyway.
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';
import { makeRepo } from '../fixtures/git-repo.js';

const requirements = sessionNeeds({ commands: ['git', 'mkfifo'] });

t.test("a FIFO .gitignore: the launcher's git gives up and says why; list answers, rm --force removes", requirements, async (t) => {
  const fx = await sessionFixture(t, 'fifo');
  const repo = await makeRepo(fx.base);
  const ws = (...args: string[]) => fx.run(['workspace', ...args, '--root', fx.root]);
  t.equal((await ws('new', 'fifo-1', '--repo', repo)).exitCode, 0);
  const workspace = path.join(fx.root, 'workspaces', 'fifo-1');
  await execa('mkfifo', [path.join(workspace, '.gitignore')]);

  const control = await execa('timeout', ['3', 'git', '-c', 'safe.directory=*', '-C', workspace, 'status', '--porcelain'], {
    reject: false,
  });
  t.equal(control.exitCode, 124, `control: a plain git status there blocks until killed (${control.stderr})`);

  const began = Date.now();
  const list = await ws('list', '--json');
  const took = (Date.now() - began) / 1000;
  t.equal(list.exitCode, 0, list.stderr);
  t.ok(took < 15, `workspace list answered in ${took.toFixed(1)} s`);
  const entry = (list.json.workspaces as { id: string }[]).find((w) => w.id === 'fifo-1');
  t.match(entry, { branch: 'agent/fifo-1', uncommitted: null }, 'the count is unknown, not a guess');

  const rm = await ws('rm', 'fifo-1');
  t.equal(rm.exitCode, 80, `refused without --force: ${rm.stderr}`);
  t.match(rm.stderr, /did not answer within 10 s \(a FIFO/);
  const forced = await ws('rm', 'fifo-1', '--force');
  t.equal(forced.exitCode, 0, forced.stderr);
  t.notOk(existsSync(workspace), 'removed with --force');
});

// What the user's own tools meet in the workspace after a session (issue 32, findings 1 and 4):
// the session makes a nested repository, commits it as a gitlink and sets its core.fsmonitor to a
// command, and leaves a FIFO at sub/.gitignore. The control shows the harm on the host without the
// launcher: the owner's `git status` at the top runs the nested repository's fsmonitor. After a
// real session both are moved out to <root>/quarantine/<id>/<time>/ with a restore script; the
// owner's git status at the top and inside the nested folder runs nothing the agent wrote and
// answers at once, and the end line and the ledger say what moved and how to put it back.
import t from 'tap';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { tempDir } from '@agent-sandbox/testkit';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';
import { makeRepo } from '../fixtures/git-repo.js';

const requirements = sessionNeeds({ commands: ['git'] });
const ownersGit = (cwd: string, ...args: string[]) =>
  execa('timeout', ['10', 'git', '-c', 'safe.directory=*', '-C', cwd, ...args], { reject: false });

/** The agent's plant, as a shell script; `canary` is the host path its fsmonitor command would touch. */
const plant = (canary: string) =>
  [
    'git init -q nested',
    'git -C nested -c user.name=a -c user.email=a@example.invalid commit -q --allow-empty -m n',
    'git add nested 2>/dev/null',
    'git -c user.name=Agent -c user.email=agent@sandbox.invalid commit -qm nested',
    `git -C nested config core.fsmonitor "touch ${canary}; false"`,
    'mkdir -p sub && mkfifo sub/.gitignore',
  ].join(' && ');

t.test("control: without the launcher, the owner's git status at the top runs the nested repository's fsmonitor", async (t) => {
  const base = await tempDir(t, 'quarantine-control-');
  const canary = path.join(base, 'CANARY');
  await execa('git', ['init', '-q', 'top'], { cwd: base });
  await execa('sh', ['-c', plant(canary).replace(' && mkdir -p sub && mkfifo sub/.gitignore', '')], { cwd: path.join(base, 'top') });
  await ownersGit(path.join(base, 'top'), 'status');
  t.ok(existsSync(canary), "the agent's command ran as the owner");
});

t.test(
  "after a session the nested repository and the FIFO are moved out: the owner's git runs nothing and does not block",
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'quarantine');
    const repo = await makeRepo(fx.base);
    t.equal((await fx.run(['workspace', 'new', 'q-1', '--repo', repo, '--root', fx.root])).exitCode, 0);
    const canary = path.join(fx.base, 'CANARY');
    const out = await fx.run([
      'run',
      '--runtime',
      'codex',
      '--workspace',
      'q-1',
      '--root',
      fx.root,
      '--ledger',
      fx.ledger,
      '--agent-bin',
      'sh',
      '--',
      '-c',
      plant(canary),
    ]);
    t.equal(out.exitCode, 0, out.stderr);
    const workspace = path.join(fx.root, 'workspaces', 'q-1');
    const line = fx.ledgerLines().at(-1)!;
    t.match(line.quarantined, {
      named: [
        { path: 'nested/.git', kind: 'gitdir' },
        { path: 'sub/.gitignore', kind: 'special' },
      ],
      others: 0,
    });
    t.match(out.stderr, /moved 2 things your git or shell would run or block on out of the workspace/);
    t.notOk(existsSync(path.join(workspace, 'nested', '.git')), 'the nested git dir is gone from the worktree');
    t.notOk(
      lstatSync(path.join(workspace, 'sub'), { throwIfNoEntry: false }) && readdirSync(path.join(workspace, 'sub')).includes('.gitignore'),
      'the FIFO is gone',
    );
    const dir = line.quarantined.dir as string;
    t.ok(dir.startsWith(path.join(fx.root, 'quarantine', 'q-1')), `beside the workspace, under the root: ${dir}`);
    t.ok(
      lstatSync(path.join(dir, 'nested', '.git')).isDirectory() && lstatSync(path.join(dir, 'sub', '.gitignore')).isFIFO(),
      'both are in the quarantine',
    );

    const top = await ownersGit(workspace, 'status');
    t.equal(top.exitCode, 0, `git status at the top answers (${top.stderr})`);
    const inside = await ownersGit(path.join(workspace, 'nested'), 'status');
    t.equal(inside.exitCode, 0, 'and inside the nested folder');
    t.notOk(existsSync(canary), "the agent's fsmonitor command never ran");

    const kept = await fx.run(['workspace', 'rm', 'q-1', '--root', fx.root]);
    t.equal(kept.exitCode, 80, 'workspace rm keeps a workspace whose quarantine holds something');
    t.match(kept.stderr, /quarantine-not-empty|look at it, or remove it with the workspace with --force/);

    await execa('sh', [line.quarantined.restore]);
    t.ok(existsSync(path.join(workspace, 'nested', '.git', 'config')), 'the restore script puts them back');
    const removed = await fx.run(['workspace', 'rm', 'q-1', '--root', fx.root, '--force']);
    t.equal(removed.exitCode, 0, removed.stderr);
    t.notOk(existsSync(path.join(fx.root, 'quarantine', 'q-1')), 'workspace rm --force removes the quarantine with the workspace');
  },
);

// A session that leaves a 10 000-level directory in its git store, its home and its workspace
// (issue 32, finding 5): node's recursive rm overflows its stack on such a tree (the control,
// below), so every removal of a tree a session wrote goes through one that cannot (coreutils rm,
// lib/shared/src/beneath.ts removeTree). The session ends with its agent's own status and its
// commit home, the store is gone, the workspace runs again, and `workspace rm --force`
// removes it all.
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { tempDir } from '@agent-sandbox/testkit';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';
import { git, makeRepo } from '../fixtures/git-repo.js';

const requirements = sessionNeeds({ commands: ['git'] });
const depth = 10_000;

/** Node code that makes `deep/d/d/...` `depth` levels below each directory of argv, one relative step at a time (no path grows past PATH_MAX). */
const makeDeep = `const fs = require('fs'); for (const base of process.argv.slice(1)) { process.chdir(base); fs.mkdirSync('deep'); process.chdir('deep'); for (let i = 0; i < ${depth}; i += 1) { fs.mkdirSync('d'); process.chdir('d'); } }`;

t.test(`control: node's recursive rm overflows on a ${depth}-level tree`, async (t) => {
  const dir = await tempDir(t, 'deep-control-');
  const out = await execa(
    'node',
    [
      '-e',
      `${makeDeep}; try { fs.rmSync(process.argv[1] + '/deep', { recursive: true, force: true }); console.log('removed'); } catch (e) { console.log(e.message); }`,
      dir,
    ],
    { reject: false },
  );
  t.match(out.stdout, /Maximum call stack size exceeded/, 'the tree a session can make is beyond what rmSync removes');
  await execa('rm', ['-rf', '--one-file-system', '--', path.join(dir, 'deep')]);
});

t.test(
  `a ${depth}-level tree in the store, the home and the workspace: the agent's status stands, the store goes, the workspace runs again and rm --force removes it`,
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'deeptree');
    const repo = await makeRepo(fx.base);
    const ws = (...args: string[]) => fx.run(['workspace', ...args, '--root', fx.root]);
    t.equal((await ws('new', 'deep-1', '--repo', repo)).exitCode, 0);
    const script = [
      'S=$(git rev-parse --path-format=absolute --git-common-dir)',
      `node -e "${makeDeep}" "$HOME" "$PWD" "$S"`,
      'echo by-agent > agent.txt && git add agent.txt && git -c user.name=Agent -c user.email=agent@sandbox.invalid commit -qm deep',
      'exit 7',
    ].join(' && ');
    const run = () =>
      fx.run(
        [
          'run',
          '--runtime',
          'codex',
          '--workspace',
          'deep-1',
          '--root',
          fx.root,
          '--ledger',
          fx.ledger,
          '--agent-bin',
          'sh',
          '--',
          '-c',
          script,
        ],
        { timeoutMs: 300_000 },
      );
    const first = await run();
    t.equal(first.exitCode, 7, `the agent's own status (stderr: ${first.stderr.slice(-400)})`);
    const line = fx.ledgerLines().at(-1)!;
    t.match(line, { outcome: 'ran', reason: 'exited', exitCode: 7 });
    t.equal(line.gitReturn?.outcome, 'fast-forward', 'the commit came home');
    t.equal(await git(repo, 'log', '-1', '--format=%s', 'agent/deep-1'), 'deep');
    t.notOk(existsSync(path.join(fx.root, 'git-stores', 'deep-1')), 'the store is removed');
    t.ok(
      existsSync(path.join(fx.root, 'homes', 'deep-1', 'deep', 'd')),
      "the home keeps it (a workspace's home lasts across its sessions)",
    );
    t.ok(
      existsSync(path.join(fx.root, 'workspaces', 'deep-1', 'deep', 'd')),
      "the workspace keeps what the agent made (it is the user's to review)",
    );

    const again = await fx.run(
      [
        'run',
        '--runtime',
        'codex',
        '--workspace',
        'deep-1',
        '--root',
        fx.root,
        '--ledger',
        fx.ledger,
        '--agent-bin',
        'sh',
        '--',
        '-c',
        'exit 3',
      ],
      { timeoutMs: 180_000 },
    );
    t.equal(again.exitCode, 3, `the workspace runs again (stderr: ${again.stderr.slice(-400)})`);

    const rm = await ws('rm', 'deep-1', '--force');
    t.equal(rm.exitCode, 0, rm.stderr);
    t.notOk(existsSync(path.join(fx.root, 'workspaces', 'deep-1')), 'workspace rm --force removed the tree');
    t.notOk(existsSync(path.join(fx.root, 'homes', 'deep-1')), 'and the home');
    t.equal(await git(repo, 'log', '-1', '--format=%s', 'agent/deep-1'), 'deep', 'the branch stays');
  },
);

// A FIFO planted where the user's own tools read without being asked (issue 32, finding 4):
// `Makefile` and `package.json` are reported as host-run files the session added, and a FIFO
// `sub/.git` is listed with the special files the quarantine moves out. Nothing is opened: the
// scan returns at once. The control, from the world: make in that directory waits on the FIFO
// until it is killed. Real files in a directory of the test's own.
import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { diffHostRun, scanNestedGit } from '../../dist/index.js';

t.test('FIFOs named Makefile, package.json and sub/.git: reported and listed, never opened', async (t) => {
  const ws = await tempDir(t, 'special-host-run-');
  const before = await scanNestedGit(ws);
  mkdirSync(path.join(ws, 'sub'));
  execFileSync('mkfifo', [path.join(ws, 'Makefile'), path.join(ws, 'package.json'), path.join(ws, 'sub', '.git')]);
  const make = spawnSync('timeout', ['2', 'make', '-C', ws], { encoding: 'utf8' });
  t.equal(make.status, 124, 'control: make in the workspace is still waiting on the FIFO after 2 s (killed by timeout)');
  const started = Date.now();
  const after = await scanNestedGit(ws);
  t.ok(Date.now() - started < 5000, `the scan returned in ${Date.now() - started} ms`);
  t.same(
    diffHostRun(before.hostRun, after.hostRun),
    {
      named: [
        { path: 'Makefile', change: 'added' },
        { path: 'package.json', change: 'added' },
      ],
      others: 0,
    },
    'both host-run names are reported',
  );
  t.same([...after.special].sort(), ['Makefile', 'package.json', 'sub/.git'], 'all three are special files the quarantine moves out');
});

// Dispatch carries the work, against a real sshd on 127.0.0.1 and a real repository: a workspace
// made locally with `workspace new` goes to the node as a git bundle of its branch, the node keeps
// a mirror and runs the session in a linked worktree of it, and the agent's commit, made on the
// node, comes back into the local repository on the session's branch. Uncommitted work stays on
// the node and is named in the verdict. A malformed, altered, truncated, oversized or
// over-reaching bundle, and a second session on the same workspace, are refused:
// dispatch-refuses-what-it-cannot-carry.test.ts. The node's session writes its own git store and
// its branch comes into the mirror through the same checked import as a local session's.
import t from 'tap';
import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { validateDocument } from '@agent-sandbox/shared';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { git } from '@agent-sandbox/testkit';
import { commitOnNode, lines, setup } from './fixtures/dispatch-setup.js';

t.test("the agent's commit, made on the node, comes back into the local repository on the session's branch", async (t) => {
  const s = await setup(t, 'back');
  const out = await s.run(`${commitOnNode('agent.txt', 'made on the node')} && echo left > not-committed.txt && echo agent-done`);
  t.equal(out.exitCode, 0, `${out.stderr}\nsshd: ${s.sshd.log()}`);
  t.match(out.stdout, /agent-done/);
  t.equal(
    await git(s.repo, 'log', '-1', '--format=%s|%an', `agent/${s.id}`),
    'made on the node|Agent',
    'the commit is on the branch in the local repository',
  );
  const localWorkspace = path.join(s.localRoot, 'workspaces', s.id);
  t.equal(readFileSync(path.join(localWorkspace, 'agent.txt'), 'utf8'), 'made-on-the-node\n', 'the local worktree advanced with it');
  t.equal(await git(localWorkspace, 'status', '--porcelain'), '', 'and is clean');
  t.equal(await git(s.repo, 'rev-parse', 'main'), await git(s.repo, 'rev-parse', `agent/${s.id}~1`), 'main did not move');
  const nodeWorkspace = path.join(s.sshd.nodeRoot, 'workspaces', s.id);
  t.equal(readFileSync(path.join(nodeWorkspace, 'not-committed.txt'), 'utf8'), 'left\n', 'uncommitted work stays on the node');
  t.notOk(existsSync(path.join(localWorkspace, 'not-committed.txt')), 'and does not travel');
  t.match(out.stderr, /1 uncommitted path stay on the node in .*not|1 uncommitted path stay on the node/);
  const [line] = lines(s.ledger);
  validateDocument(LedgerLine, line, 'local line');
  t.match(line, {
    host: 'node1',
    exitCode: 0,
    outcome: 'ran',
    work: {
      branch: `refs/heads/agent/${s.id}`,
      fetched: 'fast-forward',
      nodeWorkspace,
      uncommitted: { count: 1, paths: ['not-committed.txt'] },
      applied: { worktree: 'created' },
    },
  });
  t.equal(line.work.received.bytes, line.work.sent.bytes, 'the node received exactly the bytes sent');
  t.equal(line.work.received.sha256, line.work.sent.sha256);
  t.ok(line.work.returned.bytes > 0 && line.work.returned.base === line.work.sent.tip, 'what came back builds on what was sent');
  const [node] = lines(s.sshd.nodeLedger);
  t.match(
    node,
    { sessionId: s.id, outcome: 'ran', work: { received: { bytes: line.work.sent.bytes } } },
    "the node's own line has the bundle it received",
  );
  t.comment(
    `figures: sent ${line.work.sent.bytes} B in ${line.work.sent.ms} ms; received+checked ${line.work.received.ms} ms; applied ${line.work.applied.ms} ms; returned ${line.work.returned.bytes} B, fetched back in ${line.work.returned.ms} ms`,
  );
  t.ok(s.mirrorDir(), 'the node keeps one mirror');

  // A second dispatch of the same workspace: a local commit goes along, the node's worktree moves to it and keeps its leftover.
  await writeFile(path.join(localWorkspace, 'local.txt'), 'from the client\n');
  await git(localWorkspace, 'add', 'local.txt');
  await git(localWorkspace, 'commit', '-qm', 'made locally');
  const again = await s.run(
    `test -f local.txt && test -f not-committed.txt && rm not-committed.txt && ${commitOnNode('second.txt', 'second on the node')}`,
  );
  t.equal(again.exitCode, 0, again.stderr);
  t.same((await git(s.repo, 'log', '--format=%s', `agent/${s.id}`)).split('\n'), [
    'second on the node',
    'made locally',
    'made on the node',
    'initial',
  ]);
  t.match(lines(s.ledger)[1], { work: { applied: { worktree: 'updated' }, fetched: 'fast-forward', uncommitted: { count: 0 } } });
});

t.test('a branch moved locally while the session ran: the commits wait at refs/agent-sandbox/returned/<id>', async (t) => {
  const s = await setup(t, 'side');
  const localWorkspace = path.join(s.localRoot, 'workspaces', s.id);
  // Someone moves the local branch while the session runs on the node (its record there exists): before the commits return.
  const pending = s.run(`${commitOnNode('a.txt', 'node side')} && sleep 3`);
  const nodeRecord = path.join(s.sshd.nodeRoot, 'sessions', `${s.id}.json`);
  for (let i = 0; i < 300 && !existsSync(nodeRecord); i += 1) await new Promise((r) => setTimeout(r, 50));
  t.ok(existsSync(nodeRecord), 'the session runs on the node');
  await git(
    s.repo,
    'update-ref',
    `refs/heads/agent/${s.id}`,
    await git(s.repo, 'commit-tree', '-p', 'main', '-m', 'moved here', `main^{tree}`),
  );
  const out = await pending;
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(await git(s.repo, 'log', '-1', '--format=%s', `refs/agent-sandbox/returned/${s.id}`), 'node side');
  t.equal(await git(s.repo, 'log', '-1', '--format=%s', `agent/${s.id}`), 'moved here', 'the local branch is not overwritten');
  t.match(lines(s.ledger)[0], { work: { fetched: 'side-ref', sideRef: `refs/agent-sandbox/returned/${s.id}` } });
  t.notOk(existsSync(path.join(localWorkspace, 'a.txt')));
});

t.test(
  'the node runs the same store and import: moved refs stay on the node, a rewritten branch comes back aside, the mirror stays whole',
  async (t) => {
    const s = await setup(t, 'rewrite');
    const first = await s.run(commitOnNode('a.txt', 'first on the node'));
    t.equal(first.exitCode, 0, first.stderr);
    const mirror = s.mirrorDir()!;
    const mirrorRefs = await git(mirror, 'for-each-ref', '--format=%(refname)');
    const agentScript = [
      'git update-ref refs/heads/main HEAD', // another branch, in the store only
      'git tag -f planted HEAD',
      'git reset -q --hard HEAD~1', // the branch rewritten: its last commit dropped...
      commitOnNode('b.txt', 'rewritten on the node'), // ...and another in its place
    ].join('; ');
    const out = await s.run(agentScript);
    t.equal(out.exitCode, 0, out.stderr);
    const side = `refs/agent-sandbox/returned/${s.id}`;
    t.equal(
      await git(s.repo, 'log', '-1', '--format=%s', side),
      'rewritten on the node',
      'the rewritten history waits at the side ref here',
    );
    t.equal(await git(s.repo, 'log', '-1', '--format=%s', `agent/${s.id}`), 'first on the node', 'the local branch is not rewritten');
    t.match(lines(s.ledger)[1], { work: { fetched: 'side-ref', sideRef: side } });
    t.equal(
      await git(mirror, 'for-each-ref', '--format=%(refname)'),
      mirrorRefs,
      "no ref the session made or moved reached the node's mirror",
    );
    t.equal(
      (await execa('git', ['-c', 'safe.directory=*', '-C', mirror, 'fsck', '--full', '--no-progress'], { reject: false })).exitCode,
      0,
      "the node's mirror passes git fsck --full",
    );
    t.equal(
      (await execa('git', ['-c', 'safe.directory=*', '-C', s.repo, 'fsck', '--full', '--no-progress'], { reject: false })).exitCode,
      0,
      'and so does the local repository',
    );
    const node = lines(s.sshd.nodeLedger).at(-1);
    t.match(
      node?.gitReturn,
      { outcome: 'side-ref', refsDropped: { named: [{ name: 'refs/heads/main' }, { name: 'refs/tags/planted' }] } },
      "the node's line counts what its import dropped",
    );
  },
);

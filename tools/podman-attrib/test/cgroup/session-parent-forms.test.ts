// The session's parent in each host's form (pure): a path with cgroupfs, one slice per session
// inside agent_sandbox.slice with systemd (dashes of the id escaped, since '-' nests slices),
// inside the user's manager when rootless; and the way back from a --cgroup-parent value.
// The forms themselves were measured in the VM tier's guest (vm/README.md).
import t from 'tap';
import { escapeSliceId, expandSlice, parentFromArg, sessionIdOfSlice, sessionParent } from '../../dist/cgroup/session-parent.js';

t.test('cgroupfs: the parent is /agent-sandbox/<id>, the same for podman and the kernel', async (t) => {
  t.same(sessionParent('a-b.c', { manager: 'cgroupfs', uid: 0 }), {
    sessionId: 'a-b.c',
    manager: 'cgroupfs',
    podmanArg: '/agent-sandbox/a-b.c',
    relPath: '/agent-sandbox/a-b.c',
  });
});

t.test('systemd, root: one slice per session in agent_sandbox.slice, its dashes escaped', async (t) => {
  const p = sessionParent('ws-1-x', { manager: 'systemd', uid: 0 });
  t.equal(p.podmanArg, 'agent_sandbox-ws\\x2d1\\x2dx.slice');
  t.equal(
    p.relPath,
    '/agent_sandbox.slice/agent_sandbox-ws\\x2d1\\x2dx.slice',
    'one level below agent_sandbox.slice, not nested by the id',
  );
  t.same(p.slice, { unit: 'agent_sandbox-ws\\x2d1\\x2dx.slice', user: false });
});

t.test("systemd, rootless: the same slice inside the user's own manager", async (t) => {
  const p = sessionParent('s1', { manager: 'systemd', uid: 1000 });
  t.equal(p.relPath, '/user.slice/user-1000.slice/user@1000.service/agent_sandbox.slice/agent_sandbox-s1.slice');
  t.same(p.slice, { unit: 'agent_sandbox-s1.slice', user: true });
});

t.test('a session id that is not a plain name is refused before it becomes a unit name', async (t) => {
  for (const id of ['../x', 'a/b', '-a', '.a', '', 'a b'])
    t.throws(() => sessionParent(id, { manager: 'systemd', uid: 0 }), { code: 'invalid-session-id' }, JSON.stringify(id));
});

t.test('slices expand as systemd expands them; our names round-trip', async (t) => {
  t.equal(expandSlice('a-b-c.slice'), '/a.slice/a-b.slice/a-b-c.slice');
  t.equal(expandSlice('machine.slice'), '/machine.slice');
  t.equal(expandSlice('-.slice'), '');
  for (const id of ['s1', 'ws-1-x', 'a_b.c-d']) t.equal(sessionIdOfSlice(`agent_sandbox-${escapeSliceId(id)}.slice`), id, id);
  t.equal(sessionIdOfSlice('machine.slice'), undefined, 'not one of ours');
});

t.test('parentFromArg: ours and foreign parents, path or slice, rootful or rootless', async (t) => {
  t.equal(parentFromArg('/agent-sandbox/s1', { manager: 'cgroupfs', uid: 0 }).sessionId, 's1');
  t.equal(parentFromArg('/machine.slice/x', { manager: 'cgroupfs', uid: 0 }).sessionId, '', 'a foreign path');
  const mine = parentFromArg('agent_sandbox-ws\\x2d1.slice', { manager: 'systemd', uid: 1000 });
  t.equal(mine.sessionId, 'ws-1');
  t.equal(mine.relPath, sessionParent('ws-1', { manager: 'systemd', uid: 1000 }).relPath, 'the same place prepare would use');
  const foreign = parentFromArg('astest_x_1.slice', { manager: 'systemd', uid: 0 });
  t.same([foreign.sessionId, foreign.relPath], ['', '/astest_x_1.slice']);
});

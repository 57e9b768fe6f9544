// Where a session lives, without podman: one session per workspace id, its home, staged
// secrets, lock and record at fixed paths under the root; a workspace given as a path is the
// pinned <root>/workspaces/<id> after realpath, or it is refused (86): outside the root, deeper
// than one level, a link out, a root that is a link, an id that is not one safe path component.
import t from 'tap';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { checkWorkspaceId, layoutFor, resolveLayout, workspaceIdOf } from '../../dist/index.js';

t.test('every path of a session follows from the root and its id', async (t) => {
  t.same(layoutFor('/r', 'fix-1'), {
    sessionId: 'fix-1',
    root: '/r',
    workspace: '/r/workspaces/fix-1',
    home: '/r/homes/fix-1',
    stageDir: '/r/secrets/fix-1',
    cacheLayerDir: '/r/cache-layers/fix-1',
    lockFile: '/r/sessions/fix-1.lock',
    recordFile: '/r/sessions/fix-1.json',
    containerName: 'agent-sandbox-fix-1',
  });
  t.equal(workspaceIdOf('fix-1'), 'fix-1');
  t.equal(workspaceIdOf('/r/workspaces/fix-1'), 'fix-1', 'a path names its last component, before anything is resolved');
});

t.test('a workspace id is one safe path component', async (t) => {
  for (const good of ['a', 'fix-1', 'A.b_c-9', 'x'.repeat(64)]) t.equal(checkWorkspaceId(good), good);
  const bad = ['', '.', '..', '.hidden', '-flag', 'a/b', 'a b', 'x'.repeat(65), 'ü'];
  for (const id of bad) t.throws(() => checkWorkspaceId(id), { exitCode: 86, code: 'bad-workspace-id' }, JSON.stringify(id));
  t.equal(bad.length, 9, 'every row ran');
});

t.test('a workspace resolves to exactly <root>/workspaces/<id>, or is refused (86)', async (t) => {
  const base = await tempDir(t, 'astest-layout-');
  const root = path.join(base, 'root');
  await mkdir(path.join(root, 'workspaces', 'fix-1', 'deeper'), { recursive: true });
  await mkdir(path.join(base, 'elsewhere'), { recursive: true });
  await symlink(path.join(base, 'elsewhere'), path.join(root, 'workspaces', 'escape'));
  await symlink(root, path.join(base, 'root-link'));
  t.match(await resolveLayout('fix-1', root), {
    sessionId: 'fix-1',
    workspace: path.join(root, 'workspaces', 'fix-1'),
    home: path.join(root, 'homes', 'fix-1'),
  });
  t.match(
    await resolveLayout(path.join(root, 'workspaces', 'fix-1'), root),
    { sessionId: 'fix-1' },
    'the same workspace given as its path',
  );
  await t.rejects(
    resolveLayout('fix-1', path.join(base, 'root-link')),
    { exitCode: 86, message: /is itself a symlink/ },
    'a root that is a link is refused: name the real directory',
  );
  const refused: [string, RegExp][] = [
    [path.join(root, 'workspaces', 'fix-1', 'deeper'), /is not directly under/],
    [path.join(root, 'workspaces'), /is not directly under/],
    [path.join(base, 'elsewhere'), /outside|not under|escapes/],
    ['escape', /outside|not under|escapes/],
    ['.hidden', /must be 1-64 characters/],
  ];
  for (const [workspace, message] of refused) await t.rejects(resolveLayout(workspace, root), { exitCode: 86, message }, workspace);
  await t.rejects(resolveLayout('fix-1', 'relative/root'), { exitCode: 80, code: 'relative-root' });
  t.equal(refused.length, 5, 'every row ran');
});

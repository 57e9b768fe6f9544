// The launcher's scan of nested repositories runs on the host over a tree the session wrote: a
// `hooks/` or `config` the agent planted as a link to a host directory or file must be read as
// that link, never through it. Observable: after the host file or directory behind the link
// changes, the scan sees no change (it never read them); re-pointing the link is a change. The
// control: the same change to a nested repository's own (real) hooks directory is seen.
import t from 'tap';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tempDir } from '@agent-sandbox/testkit';
import { diffNestedGit, scanNestedGit } from '../../dist/index.js';
import { git } from '../fixtures/git-tree.js';

async function layout(t: Parameters<typeof tempDir>[0]) {
  const base = await tempDir(t, 'mount-plan-nested-links-');
  const ws = `${base}/workspace`;
  const host = `${base}/host`;
  await mkdir(`${host}/hooks-a`, { recursive: true });
  await mkdir(`${host}/hooks-b`, { recursive: true });
  await writeFile(`${host}/hooks-a/pre-commit`, '#!/bin/sh\n');
  await writeFile(`${host}/gitconfig`, '[core]\n');
  await mkdir(ws, { recursive: true });
  for (const dir of ['linked', 'own']) await git(['init', '-q', `${ws}/vendor/${dir}`], base);
  await rm(`${ws}/vendor/linked/.git/hooks`, { recursive: true });
  await symlink(`${host}/hooks-a`, `${ws}/vendor/linked/.git/hooks`);
  await rm(`${ws}/vendor/linked/.git/config`);
  await symlink(`${host}/gitconfig`, `${ws}/vendor/linked/.git/config`);
  return { ws, host };
}

t.test('a nested hooks/ or config planted as a link to the host is signed as the link: what it names is never read', async (t) => {
  const { ws, host } = await layout(t);
  const before = await scanNestedGit(ws);
  t.same(
    before.entries.map((e) => [e.path, e.type]),
    [
      ['vendor/linked/.git', 'gitdir'],
      ['vendor/own/.git', 'gitdir'],
    ],
  );
  t.notOk(
    before.hostRun.some((f) => f.path.startsWith('vendor/linked/')),
    "the host directory's files are not listed as the nested repository's hooks",
  );
  await writeFile(`${host}/hooks-a/post-checkout`, '#!/bin/sh\n');
  await writeFile(`${host}/hooks-a/pre-commit`, '#!/bin/sh\necho changed\n');
  await writeFile(`${host}/gitconfig`, '[core]\n\tfsmonitor = x\n');
  t.same(
    diffNestedGit(before, await scanNestedGit(ws)),
    [],
    'the host directory and file behind the links changed, and the scan did not see it: it never read them',
  );
  await rm(`${ws}/vendor/linked/.git/hooks`);
  await symlink(`${host}/hooks-b`, `${ws}/vendor/linked/.git/hooks`);
  t.same(
    diffNestedGit(before, await scanNestedGit(ws)),
    [{ path: 'vendor/linked/.git', change: 'changed', type: 'gitdir' }],
    'the link re-pointed is a change',
  );
});

t.test("control: a change in a nested repository's own hooks directory is seen", async (t) => {
  const { ws } = await layout(t);
  const before = await scanNestedGit(ws);
  await writeFile(`${ws}/vendor/own/.git/hooks/post-checkout`, '#!/bin/sh\n');
  t.same(diffNestedGit(before, await scanNestedGit(ws)), [{ path: 'vendor/own/.git', change: 'changed', type: 'gitdir' }]);
});

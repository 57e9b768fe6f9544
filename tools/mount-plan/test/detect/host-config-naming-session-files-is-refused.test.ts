// The repository's config is read-only inside, but a value in it (or in the user's global
// config) can name a file the session writes: husky's relative core.hooksPath, an include of the
// workspace's own .gitconfig, a relative filter command. Then the host's git would run or read the
// agent's version. The plan refuses such configuration (87) unless the caller accepts it, and then
// lists it. Real repositories, real git config; the refusal through the real executable.
import t from 'tap';
import { mkdir } from 'node:fs/promises';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import { commandWord, findWritableConfig, parseConfigList, planMounts } from '../../dist/index.js';
import { git, worktreeSession } from '../fixtures/git-tree.js';

interface Row {
  claim: string;
  /** `git config` arguments run in the repository (the common config for a worktree). */
  config: [string, string];
  /** Refused (true) or accepted as harmless (false). */
  refused: boolean;
  kind: 'worktree' | 'repo';
}

const rows: Row[] = [
  {
    claim: "husky's relative core.hooksPath names the session's own workspace",
    config: ['core.hooksPath', '.husky/_'],
    refused: true,
    kind: 'worktree',
  },
  {
    claim: 'an absolute core.hooksPath inside the workspace is refused',
    config: ['core.hooksPath', '@WS@/hooks'],
    refused: true,
    kind: 'repo',
  },
  {
    claim: "include.path ../.gitconfig in a plain repository names the workspace's file",
    config: ['include.path', '../.gitconfig'],
    refused: true,
    kind: 'repo',
  },
  {
    claim: 'an includeIf path into the workspace is refused',
    config: ['includeIf.gitdir:/.path', '@WS@/x.inc'],
    refused: true,
    kind: 'worktree',
  },
  {
    claim: 'a filter command with a relative path runs the workspace copy',
    config: ['filter.x.clean', './tools/clean --strict'],
    refused: true,
    kind: 'worktree',
  },
  {
    claim: 'a core.fsmonitor hook path in the workspace is refused',
    config: ['core.fsmonitor', '@WS@/fsmon.sh'],
    refused: true,
    kind: 'repo',
  },
  {
    claim: 'a shell alias running a workspace script is refused',
    config: ['alias.lint', '!./scripts/lint.sh'],
    refused: true,
    kind: 'worktree',
  },
  {
    claim: 'a quoted diff driver path in the workspace is refused',
    config: ['diff.x.textconv', '"@WS@/bin/conv" --x'],
    refused: true,
    kind: 'repo',
  },
  {
    claim: 'a command found on PATH is accepted',
    config: ['filter.lfs.process', 'git-lfs filter-process'],
    refused: false,
    kind: 'worktree',
  },
  {
    claim: 'an absolute hooksPath outside every session path is accepted',
    config: ['core.hooksPath', '/usr/share/git-hooks'],
    refused: false,
    kind: 'worktree',
  },
  { claim: 'core.fsmonitor=true (the built-in daemon) is accepted', config: ['core.fsmonitor', 'true'], refused: false, kind: 'repo' },
  { claim: 'an alias that is not a shell command is accepted', config: ['alias.st', 'status ./x'], refused: false, kind: 'worktree' },
  {
    claim: 'include.path relative to a common dir outside the workspace is accepted',
    config: ['include.path', 'extra.inc'],
    refused: false,
    kind: 'worktree',
  },
];

async function session(base: string, kind: Row['kind']) {
  if (kind === 'worktree') {
    const tree = await worktreeSession(base);
    return { input: { workspace: tree.workspace, root: tree.root, sessionId: 's1', gitRoots: [tree.gitRoot] }, configIn: tree.main };
  }
  const ws = `${base}/root/workspaces/s1`;
  await mkdir(ws, { recursive: true });
  await git(['init', '-q', '-b', 'main'], ws);
  await git(['commit', '-q', '--allow-empty', '-m', 'x'], ws);
  return { input: { workspace: ws, root: `${base}/root`, sessionId: 's1' }, configIn: ws };
}

t.test('host git configuration that names a file the session can write', async (t) => {
  let ran = 0;
  for (const row of rows) {
    await t.test(row.claim, async (t) => {
      const base = await tempDir(t, 'mount-plan-cfg-');
      const { input, configIn } = await session(base, row.kind);
      const value = row.config[1].replaceAll('@WS@', input.workspace);
      await git(['config', row.config[0], value], configIn);
      const out = await runBin('mount-plan', [], { input });
      if (row.refused) {
        t.equal(out.exitCode, 87, 'refused with 87');
        t.equal(out.json?.error?.code, 'git-config-names-session-file');
        t.match(out.json?.error?.message, row.config[0].toLowerCase(), 'the message names the key');
        const allowed = await planMounts({ ...input, allowWorkspaceGitConfig: true });
        t.equal(allowed.git.writableConfig?.[0]?.value, value, 'accepted on request, and listed');
      } else {
        t.equal(out.exitCode, 0, `accepted (${out.stdout.slice(0, 300)})`);
        t.notOk(out.json?.git?.writableConfig, 'nothing listed');
      }
      ran += 1;
    });
  }
  t.equal(ran, rows.length, 'every row ran');
});

t.test('the config list parser keeps values with newlines and keys without values', async (t) => {
  const entries = parseConfigList('file:/a\0core.editor\nvim -f\0file:/b\0alias.x\n!a\nb\0command line:\0core.bare\0');
  t.same(entries, [
    { origin: 'file:/a', key: 'core.editor', value: 'vim -f' },
    { origin: 'file:/b', key: 'alias.x', value: '!a\nb' },
    { origin: 'command line:', key: 'core.bare', value: '' },
  ]);
  t.equal(commandWord("!'./my tool' --x"), './my tool');
  t.equal(commandWord('  sh -c x'), 'sh');
});

t.test("a path in the user's global config expands ~ to the user's home", async (t) => {
  const found = findWritableConfig([{ origin: 'file:/home/u/.gitconfig', key: 'core.hookspath', value: '~/hooks' }], {
    worktree: '/ws',
    writable: ['/home/u/hooks'],
    home: '/home/u',
  });
  t.equal(found[0]?.path, '/home/u/hooks');
});

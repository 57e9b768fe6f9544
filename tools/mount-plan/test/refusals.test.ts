// Each refusal of mount-plan, through the real executable: the exit code (86 for
// path escapes, 87 for git metadata that cannot be mounted at the same absolute
// paths, 80 for malformed input) and the error code naming the case.
// Long because it is one table of refusal rows, each a claim with its own setup; split, the
// rows would lose the one runner that counts them.
import t from 'tap';
import { mkdir, mkdtemp, rm, symlink, writeFile, rename } from 'node:fs/promises';
import { runBin, tempDir } from '@agent-sandbox/testkit';
import { git, worktreeSession, type SessionTree } from './fixtures/git-tree.js';

interface Row {
  claim: string;
  /** Builds the tree under `base` and returns the input document. */
  setup: (base: string) => Promise<unknown>;
  exitCode: number;
  code?: string;
}

const input = (tree: SessionTree, extra: Record<string, unknown> = {}) => ({
  workspace: tree.workspace,
  root: tree.root,
  sessionId: 's1',
  gitRoots: [tree.gitRoot],
  ...extra,
});

async function plainSession(base: string) {
  await mkdir(`${base}/root/workspaces/s1`, { recursive: true });
  return { workspace: `${base}/root/workspaces/s1`, root: `${base}/root`, sessionId: 's1' };
}

/** Replaces the workspace's .git with `content`. */
async function withGitfile(base: string, content: string | Buffer) {
  const tree = await worktreeSession(base);
  await writeFile(`${tree.workspace}/.git`, content);
  return input(tree);
}

const rows: Row[] = [
  // 80: the schema
  {
    claim: 'a session id with a slash is malformed input',
    setup: async (b) => ({ ...(await plainSession(b)), sessionId: 'a/b' }),
    exitCode: 80,
    code: 'invalid-field',
  },
  {
    claim: 'a session id starting with a dot is malformed input',
    setup: async (b) => ({ ...(await plainSession(b)), sessionId: '.s1' }),
    exitCode: 80,
    code: 'invalid-field',
  },
  {
    claim: 'a session id of 65 characters is malformed input',
    setup: async (b) => ({ ...(await plainSession(b)), sessionId: 'a'.repeat(65) }),
    exitCode: 80,
    code: 'invalid-field',
  },
  {
    claim: 'an unknown field is refused',
    setup: async (b) => ({ ...(await plainSession(b)), extra: 1 }),
    exitCode: 80,
    code: 'unknown-field',
  },
  {
    claim: 'a writable credential mount is malformed input',
    setup: async (b) => ({
      ...(await plainSession(b)),
      credentials: [{ source: `${b}/c`, destination: '/sandbox-secrets/x/c', readOnly: false }],
    }),
    exitCode: 80,
    code: 'invalid-field',
  },
  {
    claim: 'a credential outside /sandbox-secrets is malformed input',
    setup: async (b) => ({
      ...(await plainSession(b)),
      credentials: [{ source: `${b}/c`, destination: '/sandbox/home/c', readOnly: true }],
    }),
    exitCode: 80,
    code: 'invalid-field',
  },
  // 86: the workspace, the home, credential sources
  {
    claim: 'a workspace outside the root is refused',
    setup: async (b) => (
      await mkdir(`${b}/root`),
      await mkdir(`${b}/elsewhere`),
      { workspace: `${b}/elsewhere`, root: `${b}/root`, sessionId: 's1' }
    ),
    exitCode: 86,
    code: 'outside-root',
  },
  {
    claim: "another session's workspace is refused (the mapping is pinned)",
    setup: async (b) => (
      await mkdir(`${b}/root/workspaces/s2`, { recursive: true }),
      { workspace: `${b}/root/workspaces/s2`, root: `${b}/root`, sessionId: 's1' }
    ),
    exitCode: 86,
    code: 'workspace-not-pinned',
  },
  {
    claim: 'the whole root as workspace is refused',
    setup: async (b) => (
      await mkdir(`${b}/root/workspaces/s1`, { recursive: true }),
      { workspace: `${b}/root`, root: `${b}/root`, sessionId: 's1' }
    ),
    exitCode: 86,
    code: 'workspace-not-pinned',
  },
  {
    claim: "a workspace that is a symlink to another session's workspace is refused",
    setup: async (b) => {
      await mkdir(`${b}/root/workspaces/s2`, { recursive: true });
      await symlink(`${b}/root/workspaces/s2`, `${b}/root/workspaces/s1`);
      return { workspace: `${b}/root/workspaces/s1`, root: `${b}/root`, sessionId: 's1' };
    },
    exitCode: 86,
    code: 'workspace-not-pinned',
  },
  {
    claim: 'a workspace that is a symlink out of the root is a symlink escape',
    setup: async (b) => {
      await mkdir(`${b}/root/workspaces`, { recursive: true });
      await mkdir(`${b}/outside`);
      await symlink(`${b}/outside`, `${b}/root/workspaces/s1`);
      return { workspace: `${b}/root/workspaces/s1`, root: `${b}/root`, sessionId: 's1' };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: "a home that is a symlink to another session's home is refused",
    setup: async (b) => {
      const doc = await plainSession(b);
      await mkdir(`${b}/root/homes/s2`, { recursive: true });
      await symlink(`${b}/root/homes/s2`, `${b}/root/homes/s1`);
      return doc;
    },
    exitCode: 86,
    code: 'home-not-pinned',
  },
  {
    claim: 'a credential source that is a symlink out of its directory is a symlink escape',
    setup: async (b) => {
      const doc = await plainSession(b);
      await mkdir(`${b}/creds`);
      await writeFile(`${b}/secret`, 'canary');
      await symlink(`${b}/secret`, `${b}/creds/auth.json`);
      return { ...doc, credentials: [{ source: `${b}/creds/auth.json`, destination: '/sandbox-secrets/codex/auth.json', readOnly: true }] };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: 'a credential source outside the credential roots is refused',
    setup: async (b) => {
      const doc = await plainSession(b);
      await writeFile(`${b}/auth.json`, 'canary');
      return {
        ...doc,
        credentialRoots: [`${b}/root`],
        credentials: [{ source: `${b}/auth.json`, destination: '/sandbox-secrets/c/auth.json', readOnly: true }],
      };
    },
    exitCode: 86,
    code: 'outside-root',
  },
  {
    claim: 'a credential destination climbing out of /sandbox-secrets is refused',
    setup: async (b) => {
      const doc = await plainSession(b);
      await writeFile(`${b}/auth.json`, 'canary');
      return { ...doc, credentials: [{ source: `${b}/auth.json`, destination: '/sandbox-secrets/../etc/passwd', readOnly: true }] };
    },
    exitCode: 86,
    code: 'credential-destination',
  },
  {
    claim: 'two credentials at one destination are refused',
    setup: async (b) => {
      const doc = await plainSession(b);
      await writeFile(`${b}/a`, 'canary');
      const c = { source: `${b}/a`, destination: '/sandbox-secrets/c/a', readOnly: true };
      return { ...doc, credentials: [c, c] };
    },
    exitCode: 86,
    code: 'duplicate-destination',
  },
  // 87: git metadata
  {
    claim: 'a plain repository whose .git/refs is a symlink is refused: it would be mounted read-write',
    setup: async (b) => {
      const s = await plainSession(b);
      await git(['init', '-q'], s.workspace);
      await rm(`${s.workspace}/.git/refs`, { recursive: true });
      await mkdir(`${b}/secret`);
      await symlink(`${b}/secret`, `${s.workspace}/.git/refs`);
      return s;
    },
    exitCode: 87,
    code: 'git-entry-not-plain',
  },
  {
    claim: 'a linked worktree whose config.worktree is a symlink is refused: it would be mounted and removed',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      await symlink('/etc/passwd', `${tree.common}/worktrees/s1/config.worktree`);
      return input(tree);
    },
    exitCode: 87,
    code: 'git-entry-not-plain',
  },
  {
    claim: 'a plain repository without HEAD is refused',
    setup: async (b) => {
      const s = await plainSession(b);
      await git(['init', '-q'], s.workspace);
      await rm(`${s.workspace}/.git/HEAD`);
      return s;
    },
    exitCode: 87,
    code: 'gitdir-not-a-repository',
  },
  {
    claim: 'a common dir outside the permitted git roots is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      return input(tree, { gitRoots: [tree.root] });
    },
    exitCode: 87,
    code: 'git-outside-permitted-root',
  },
  {
    claim: 'by default only the sandbox root is a git root',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      const { gitRoots: _, ...rest } = input(tree);
      return rest;
    },
    exitCode: 87,
    code: 'git-outside-permitted-root',
  },
  {
    claim: 'a relative gitdir in the gitfile is refused',
    setup: async (b) => withGitfile(b, 'gitdir: ../../../gitroot/main/.git/worktrees/s1\n'),
    exitCode: 87,
    code: 'relative-gitdir-unresolvable',
  },
  {
    claim: 'a gitfile with a BOM is refused',
    setup: async (b) =>
      withGitfile(b, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`gitdir: ${b}/gitroot/main/.git/worktrees/s1\n`)])),
    exitCode: 87,
    code: 'gitfile-bom',
  },
  {
    claim: 'a gitfile with CRLF is refused',
    setup: async (b) => withGitfile(b, `gitdir: ${b}/gitroot/main/.git/worktrees/s1\r\n`),
    exitCode: 87,
    code: 'gitfile-crlf',
  },
  {
    claim: 'a gitfile with a NUL is refused',
    setup: async (b) => withGitfile(b, `gitdir: ${b}/gitroot/main/.git/worktrees/s1\0x\n`),
    exitCode: 87,
    code: 'gitfile-nul',
  },
  {
    claim: 'a gitfile with trailing junk is refused',
    setup: async (b) => withGitfile(b, `gitdir: ${b}/gitroot/main/.git/worktrees/s1\njunk\n`),
    exitCode: 87,
    code: 'gitfile-trailing-junk',
  },
  {
    claim: 'a gitfile with trailing spaces is refused',
    setup: async (b) => withGitfile(b, `gitdir: ${b}/gitroot/main/.git/worktrees/s1  \n`),
    exitCode: 87,
    code: 'gitfile-whitespace',
  },
  {
    claim: 'a gitfile over 1 MiB is refused',
    setup: async (b) => withGitfile(b, Buffer.concat([Buffer.from(`gitdir: ${b}/x`), Buffer.alloc((1 << 20) + 1, 0x0a)])),
    exitCode: 87,
    code: 'gitfile-too-large',
  },
  {
    claim: 'a gitfile without the prefix is refused',
    setup: async (b) => withGitfile(b, `${b}/gitroot/main/.git/worktrees/s1\n`),
    exitCode: 87,
    code: 'gitfile-malformed',
  },
  { claim: 'an empty gitfile is refused', setup: async (b) => withGitfile(b, ''), exitCode: 87, code: 'gitfile-malformed' },
  { claim: 'a gitfile naming no path is refused', setup: async (b) => withGitfile(b, 'gitdir: \n'), exitCode: 87, code: 'gitfile-empty' },
  {
    claim: 'a gitdir reached through a symlink is refused',
    setup: async (b) => {
      const doc = await withGitfile(b, `gitdir: ${b}/link/worktrees/s1\n`);
      await symlink(`${b}/gitroot/main/.git`, `${b}/link`);
      return doc;
    },
    exitCode: 87,
    code: 'gitdir-not-canonical',
  },
  {
    claim: 'a gitdir that does not exist is refused',
    setup: async (b) => withGitfile(b, `gitdir: ${b}/gitroot/nowhere\n`),
    exitCode: 87,
    code: 'gitdir-not-found',
  },
  {
    claim: 'a .git symlink is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      await rm(`${tree.workspace}/.git`);
      await symlink(`${tree.common}`, `${tree.workspace}/.git`);
      return input(tree);
    },
    exitCode: 87,
    code: 'dotgit-symlink',
  },
  {
    claim: 'a commondir reached through a symlink is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      await symlink(tree.common, `${b}/gitroot/common-link`);
      await writeFile(`${tree.common}/worktrees/s1/commondir`, `${b}/gitroot/common-link\n`);
      return input(tree);
    },
    exitCode: 87,
    code: 'commondir-not-canonical',
  },
  {
    claim: 'a malformed commondir file is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      await writeFile(`${tree.common}/worktrees/s1/commondir`, '../..\r\n');
      return input(tree);
    },
    exitCode: 87,
    code: 'gitfile-crlf',
  },
  {
    claim: 'a registration naming another path than the workspace is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      await writeFile(`${tree.common}/worktrees/s1/gitdir`, `${b}/moved/.git\n`);
      return input(tree);
    },
    exitCode: 87,
    code: 'worktree-registration-mismatch',
  },
  {
    claim: 'a worktree gitdir that is not <common>/worktrees/<name> is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      await rename(`${tree.common}/worktrees/s1`, `${b}/gitroot/stray`);
      await writeFile(`${b}/gitroot/stray/commondir`, `${tree.common}\n`);
      await writeFile(`${tree.workspace}/.git`, `gitdir: ${b}/gitroot/stray\n`);
      return input(tree);
    },
    exitCode: 87,
    code: 'gitdir-outside-commondir',
  },
  {
    claim: "git metadata inside another session's workspace is refused",
    setup: async (b) => {
      const root = `${b}/root`;
      await mkdir(`${root}/workspaces/s2`, { recursive: true });
      await git(['init', '-q'], `${root}/workspaces/s2`);
      await git(['commit', '-q', '--allow-empty', '-m', 'x'], `${root}/workspaces/s2`);
      await git(['worktree', 'add', '-q', `${root}/workspaces/s1`], `${root}/workspaces/s2`);
      return { workspace: `${root}/workspaces/s1`, root, sessionId: 's1' };
    },
    exitCode: 87,
    code: 'git-metadata-in-other-session',
  },
  {
    claim: 'git metadata containing the sandbox root is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      // a root that lives inside the common dir: mounting the common dir would expose it all
      const root = `${tree.common}/sandbox`;
      await mkdir(`${root}/workspaces`, { recursive: true });
      await git(['worktree', 'move', tree.workspace, `${root}/workspaces/s1`], tree.main);
      return { workspace: `${root}/workspaces/s1`, root, sessionId: 's1', gitRoots: [tree.gitRoot] };
    },
    exitCode: 87,
    code: 'git-metadata-contains-root',
  },
  {
    claim: 'a gitdir inside the workspace named by an absolute gitfile is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      await git(['init', '-q', '--bare', `${tree.workspace}/inner.git`], b);
      await writeFile(`${tree.workspace}/.git`, `gitdir: ${tree.workspace}/inner.git\n`);
      return input(tree);
    },
    exitCode: 87,
    code: 'git-metadata-inside-workspace',
  },
  {
    claim: 'a submodule whose core.worktree names another directory is refused',
    setup: async (b) => {
      const tree = await worktreeSession(b);
      const gd = `${b}/gitroot/sub.git`;
      await git(['init', '-q', '--bare', gd], b);
      await git(['config', '--file', `${gd}/config`, 'core.worktree', `${b}/elsewhere`], b);
      await mkdir(`${b}/elsewhere`);
      await writeFile(`${tree.workspace}/.git`, `gitdir: ${gd}\n`);
      return input(tree);
    },
    exitCode: 87,
    code: 'submodule-worktree-mismatch',
  },
];

/** Runs `fn` over `items` with at most `limit` at a time (each row spawns the real bin). */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

t.test('every refusal exits with its code', async (t) => {
  const outcomes = await pool(rows, 6, async (row) => {
    const base = await tempDir(t, 'mount-plan-refuse-');
    return runBin('mount-plan', [], { input: await row.setup(base) });
  });
  let ran = 0;
  rows.forEach((row, i) => {
    const out = outcomes[i]!;
    t.equal(out.exitCode, row.exitCode, `${row.claim}: exit ${row.exitCode} (${out.stdout.trim()})`);
    t.equal(out.json?.ok, false, `${row.claim}: ok is false`);
    if (row.code) t.equal(out.json?.error?.code, row.code, `${row.claim}: code ${row.code}`);
    t.notMatch(out.stdout + out.stderr, /canary/, `${row.claim}: no credential contents in the output`);
    ran += 1;
  });
  t.equal(ran, rows.length, 'every row ran');
});

t.test('git metadata at a reserved container path is refused (87), however it is permitted', async (t) => {
  // /run is reserved: a host git dir there would be mounted over the container's /run.
  const base = await mkdtemp('/run/astest-mount-plan-');
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const tree = await worktreeSession(base);
  const out = await runBin('mount-plan', [], { input: input(tree) });
  t.equal(out.exitCode, 87);
  t.equal(out.json?.error?.code, 'reserved-destination');
  t.match(out.json?.error?.message, /collides with reserved \/run/);
});

t.test('a workspace host path under a reserved container path cannot be aliased (87)', async (t) => {
  const base = await mkdtemp('/run/astest-mount-plan-');
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const gitBase = await tempDir(t, 'mount-plan-gitroot-');
  await mkdir(`${base}/root/workspaces`, { recursive: true });
  await git(['init', '-q', `${gitBase}/main`], gitBase);
  await git(['commit', '-q', '--allow-empty', '-m', 'x'], `${gitBase}/main`);
  await git(['worktree', 'add', '-q', `${base}/root/workspaces/s1`], `${gitBase}/main`);
  const out = await runBin('mount-plan', [], {
    input: { workspace: `${base}/root/workspaces/s1`, root: `${base}/root`, sessionId: 's1', gitRoots: [gitBase] },
  });
  t.equal(out.exitCode, 87);
  t.equal(out.json?.error?.code, 'reserved-destination');
  t.match(out.json?.error?.message, /workspace host path/);
});

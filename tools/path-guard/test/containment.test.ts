// Each row is one claim about path-guard, run through the real executable.
// Long because it is one table of containment rows (every escape path-guard refuses), run by
// one runner that counts them.
import t from 'tap';
import { mkdir, symlink, writeFile, lstat, rm } from 'node:fs/promises';
import { runBin, tempDir } from '@agent-sandbox/testkit';

interface Row {
  claim: string;
  /** Builds the tree under `base` and returns the input document. */
  setup: (base: string) => Promise<unknown>;
  exitCode: number;
  code?: string;
  resolved?: (base: string) => string;
}

const rows: Row[] = [
  {
    claim: 'a directory below the root is contained',
    setup: async (b) => (await mkdir(`${b}/root/ws/s1`, { recursive: true }), { path: `${b}/root/ws/s1`, root: `${b}/root` }),
    exitCode: 0,
    resolved: (b) => `${b}/root/ws/s1`,
  },
  {
    claim: 'the root itself is contained',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root`, root: `${b}/root` }),
    exitCode: 0,
    resolved: (b) => `${b}/root`,
  },
  {
    claim: 'a relative path is taken under the root',
    setup: async (b) => (await mkdir(`${b}/root/ws`, { recursive: true }), { path: 'ws', root: `${b}/root` }),
    exitCode: 0,
    resolved: (b) => `${b}/root/ws`,
  },
  {
    claim: 'a symlink inside the root pointing inside it is followed and accepted',
    setup: async (b) => {
      await mkdir(`${b}/root/real`, { recursive: true });
      await symlink(`${b}/root/real`, `${b}/root/link`);
      return { path: `${b}/root/link`, root: `${b}/root` };
    },
    exitCode: 0,
    resolved: (b) => `${b}/root/real`,
  },
  {
    claim: 'a sibling whose name starts with the root name is outside',
    setup: async (b) => {
      await mkdir(`${b}/root`);
      await mkdir(`${b}/root-evil`);
      return { path: `${b}/root-evil`, root: `${b}/root` };
    },
    exitCode: 86,
    code: 'outside-root',
  },
  {
    claim: 'a path above the root is outside',
    setup: async (b) => (await mkdir(`${b}/root`), { path: b, root: `${b}/root` }),
    exitCode: 86,
    code: 'outside-root',
  },
  {
    claim: 'dot-dot segments that climb out lexically are outside',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root/../`, root: `${b}/root` }),
    exitCode: 86,
    code: 'outside-root',
  },
  {
    claim: 'a link inside the root pointing out is a symlink escape',
    setup: async (b) => {
      await mkdir(`${b}/root`);
      await mkdir(`${b}/outside`);
      await symlink(`${b}/outside`, `${b}/root/escape`);
      return { path: `${b}/root/escape`, root: `${b}/root` };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: 'a link in a parent component pointing out is a symlink escape',
    setup: async (b) => {
      await mkdir(`${b}/root`);
      await mkdir(`${b}/outside/deep`, { recursive: true });
      await symlink(`${b}/outside`, `${b}/root/parent`);
      return { path: `${b}/root/parent/deep`, root: `${b}/root` };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: 'dot-dot after a link is resolved after the link, not lexically',
    setup: async (b) => {
      await mkdir(`${b}/root/inside`, { recursive: true });
      await mkdir(`${b}/outside/a`, { recursive: true });
      await mkdir(`${b}/outside/inside`, { recursive: true });
      await symlink(`${b}/outside/a`, `${b}/root/link`);
      // Lexically root/link/../inside is root/inside; really it is outside/inside.
      return { path: `${b}/root/link/../inside`, root: `${b}/root` };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: 'a relative symlink climbing out of the root is a symlink escape',
    setup: async (b) => {
      await mkdir(`${b}/root`);
      await mkdir(`${b}/outside`);
      await symlink('../outside', `${b}/root/rel`);
      return { path: `${b}/root/rel`, root: `${b}/root` };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: 'a symlink loop is refused',
    setup: async (b) => {
      await mkdir(`${b}/root`);
      await symlink(`${b}/root/b`, `${b}/root/a`);
      await symlink(`${b}/root/a`, `${b}/root/b`);
      return { path: `${b}/root/a`, root: `${b}/root` };
    },
    exitCode: 86,
    code: 'symlink-loop',
  },
  {
    claim: 'a regular file where a directory is required is refused',
    setup: async (b) => (await mkdir(`${b}/root`), await writeFile(`${b}/root/f`, 'x'), { path: `${b}/root/f`, root: `${b}/root` }),
    exitCode: 86,
    code: 'not-a-directory',
  },
  {
    claim: 'a file is accepted when kind is file',
    setup: async (b) => (
      await mkdir(`${b}/root`),
      await writeFile(`${b}/root/f`, 'x'),
      { path: `${b}/root/f`, root: `${b}/root`, kind: 'file' }
    ),
    exitCode: 0,
    resolved: (b) => `${b}/root/f`,
  },
  {
    claim: 'a file used as a directory component is refused',
    setup: async (b) => (await mkdir(`${b}/root`), await writeFile(`${b}/root/f`, 'x'), { path: `${b}/root/f/x`, root: `${b}/root` }),
    exitCode: 86,
    code: 'not-a-directory',
  },
  {
    claim: 'a missing path without create is refused',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root/missing`, root: `${b}/root` }),
    exitCode: 86,
    code: 'not-found',
  },
  {
    claim: 'a relative root is refused',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root`, root: 'root' }),
    exitCode: 86,
    code: 'relative-root',
  },
  {
    claim: 'an empty path is refused',
    setup: async (b) => (await mkdir(`${b}/root`), { path: '', root: `${b}/root` }),
    exitCode: 86,
    code: 'empty-path',
  },
  {
    claim: 'an empty root is refused',
    setup: async (b) => ({ path: b, root: '' }),
    exitCode: 86,
    code: 'empty-path',
  },
  {
    claim: 'a NUL byte in the path is refused',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root/a\u0000b`, root: `${b}/root` }),
    exitCode: 86,
    code: 'nul-byte',
  },
  {
    claim: 'a path longer than PATH_MAX is refused',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root/${'a/'.repeat(2100)}`, root: `${b}/root` }),
    exitCode: 86,
    code: 'path-too-long',
  },
  {
    claim: 'a component longer than NAME_MAX is refused',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root/${'n'.repeat(300)}`, root: `${b}/root` }),
    exitCode: 86,
    code: 'path-too-long',
  },
  {
    claim: 'a root that is itself a symlink is refused',
    setup: async (b) => {
      await mkdir(`${b}/realroot/ws`, { recursive: true });
      await symlink(`${b}/realroot`, `${b}/root`);
      return { path: `${b}/realroot/ws`, root: `${b}/root` };
    },
    exitCode: 86,
    code: 'root-is-symlink',
  },
  {
    claim: 'a root that does not exist is refused',
    setup: async (b) => ({ path: `${b}/nope/x`, root: `${b}/nope` }),
    exitCode: 86,
    code: 'root-not-found',
  },
  {
    claim: 'a root that is a file is refused',
    setup: async (b) => (await writeFile(`${b}/rootfile`, 'x'), { path: `${b}/rootfile`, root: `${b}/rootfile` }),
    exitCode: 86,
    code: 'root-not-directory',
  },
  {
    claim: 'create makes a missing workspace under the root',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root/workspaces/s1`, root: `${b}/root`, create: true }),
    exitCode: 0,
    resolved: (b) => `${b}/root/workspaces/s1`,
  },
  {
    claim: 'create does not follow a symlink planted at the workspace name',
    setup: async (b) => {
      await mkdir(`${b}/root/workspaces`, { recursive: true });
      await mkdir(`${b}/outside`);
      await symlink(`${b}/outside`, `${b}/root/workspaces/s1`);
      return { path: `${b}/root/workspaces/s1`, root: `${b}/root`, create: true };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: 'create does not follow a dangling symlink planted at the workspace name',
    setup: async (b) => {
      await mkdir(`${b}/root/workspaces`, { recursive: true });
      await symlink(`${b}/outside-not-yet`, `${b}/root/workspaces/s1`);
      return { path: `${b}/root/workspaces/s1`, root: `${b}/root`, create: true };
    },
    exitCode: 86,
    code: 'create-race',
  },
  {
    claim: 'create under a parent link that points out is refused and creates nothing outside',
    setup: async (b) => {
      await mkdir(`${b}/root`);
      await mkdir(`${b}/outside`);
      await symlink(`${b}/outside`, `${b}/root/workspaces`);
      return { path: `${b}/root/workspaces/s1`, root: `${b}/root`, create: true };
    },
    exitCode: 86,
    code: 'symlink-escape',
  },
  {
    claim: 'create refuses dot-dot segments',
    setup: async (b) => (await mkdir(`${b}/root`), { path: `${b}/root/a/../b`, root: `${b}/root`, create: true }),
    exitCode: 86,
    code: 'dot-segment-in-create',
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, async (t) => {
    const base = await tempDir(t, 'path-guard-');
    const input = await row.setup(base);
    const out = await runBin('path-guard', [], { input });
    t.equal(out.exitCode, row.exitCode, `exit code (stderr: ${out.stderr.trim()})`);
    t.ok(out.json, 'stdout is one JSON document');
    t.equal(out.stdout.trim().split('\n').length, 1, 'exactly one line of JSON');
    if (row.exitCode === 0) {
      t.equal(out.json.ok, true);
      t.equal(out.json.resolved, row.resolved?.(base));
    } else {
      t.equal(out.json.ok, false);
      t.equal(out.json.error.code, row.code);
      t.match(out.json.error.message, /^(path|root): /, 'the message names the field');
    }
    ran += 1;
  });
}

t.test('create left nothing outside the root when refused', async (t) => {
  const base = await tempDir(t, 'path-guard-');
  await mkdir(`${base}/root`);
  await mkdir(`${base}/outside`);
  await symlink(`${base}/outside`, `${base}/root/workspaces`);
  await runBin('path-guard', [], { input: { path: `${base}/root/workspaces/s1`, root: `${base}/root`, create: true } });
  await t.rejects(lstat(`${base}/outside/s1`), 'nothing created through the link');
});

t.test('flags supply the same fields as stdin', async (t) => {
  const base = await tempDir(t, 'path-guard-');
  await mkdir(`${base}/root`);
  const out = await runBin('path-guard', ['--root', `${base}/root`, '--path', 'ws/s2', '--create']);
  t.equal(out.exitCode, 0);
  t.equal(out.json.resolved, `${base}/root/ws/s2`);
  t.equal(out.json.created, true);
  await rm(`${base}/root/ws`, { recursive: true });
});

t.teardown(() => {
  if (ran !== rows.length) throw new Error(`ran ${ran} of ${rows.length} rows: a row was skipped silently`);
});

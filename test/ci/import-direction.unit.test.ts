// `pnpm check` refuses an import against a package's declared direction (scripts/check-imports.mjs,
// package.json "layers"): on a copy of the launcher's real source with one import turned upward,
// and on a small package for each kind of offence. The real repository passes.
import t from 'tap';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';

const script = path.join(repoRoot, 'scripts', 'check-imports.mjs');
const check = (repo?: string) => execa('node', [script, ...(repo ? [repo] : [])], { reject: false });

/** A repository with one layered package: tools/demo, layers top > low, and the given files under src/. */
async function demoRepo(
  t: Parameters<typeof tempDir>[0],
  files: Record<string, string>,
  pkg: Record<string, unknown> = {},
): Promise<string> {
  const repo = await tempDir(t, 'astest-imports-');
  const dir = path.join(repo, 'tools', 'demo');
  const manifest = {
    name: 'demo',
    exports: { '.': './dist/index.js' },
    layers: [['index.ts'], ['top'], ['left', 'right'], ['low']],
    ...pkg,
  };
  await mkdir(path.join(dir, 'src'), { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify(manifest));
  for (const [name, text] of Object.entries({
    'index.ts': "export * from './top/a.js';\n",
    'top/a.ts': "export * from '../low/b.js';\n",
    'low/b.ts': 'export const b = 1;\n',
    ...files,
  })) {
    await mkdir(path.dirname(path.join(dir, 'src', name)), { recursive: true });
    await writeFile(path.join(dir, 'src', name), text);
  }
  return repo;
}

t.test('the repository as it is passes', async (t) => {
  const out = await check();
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stderr, /imports run one way in .*tools\/agent-sandbox/);
});

t.test("the launcher's own source with one import against the direction fails, naming the file, the line and the order", async (t) => {
  const repo = await tempDir(t, 'astest-imports-real-');
  const copy = path.join(repo, 'tools', 'agent-sandbox');
  await mkdir(copy, { recursive: true });
  await cp(path.join(repoRoot, 'tools', 'agent-sandbox', 'src'), path.join(copy, 'src'), { recursive: true });
  await cp(path.join(repoRoot, 'tools', 'agent-sandbox', 'package.json'), path.join(copy, 'package.json'));
  t.equal((await check(repo)).exitCode, 0, 'the copy passes as it is');
  // The ledger is the bottom row: reaching up to the commands is against the direction.
  const file = path.join(copy, 'src', 'ledger', 'append.ts');
  await writeFile(file, `${await readFile(file, 'utf8')}import type { Entry } from '../commands/index.js';\nexport type E = Entry;\n`);
  const out = await check(repo);
  t.equal(out.exitCode, 1);
  t.match(
    out.stderr,
    /tools\/agent-sandbox\/src\/ledger\/append\.ts:\d+: imports \.\.\/commands\/index\.js: a higher layer \(commands is above ledger\); imports run cli\.ts index\.ts sentinel-main\.ts > commands > /,
  );
  t.match(out.stderr, /1 import\(s\) against the direction/);
});

t.test('each kind of offence is refused', async (t) => {
  const rows: [string, Record<string, string>, Record<string, unknown>, RegExp][] = [
    [
      'an import of a higher layer',
      { 'low/c.ts': "import { a } from '../top/a.js';\nexport const c = a;\n" },
      {},
      /src\/low\/c\.ts:1: imports \.\.\/top\/a\.js: a higher layer \(top is above low\)/,
    ],
    [
      'a type-only import of a higher layer',
      { 'low/c.ts': "import type { X } from '../top/x.js';\nexport type C = X;\n", 'top/x.ts': 'export type X = 1;\n' },
      {},
      /src\/low\/c\.ts:1: imports \.\.\/top\/x\.js: a higher layer/,
    ],
    [
      'a re-export from a higher layer',
      { 'low/c.ts': "export { a } from '../top/a.js';\n" },
      {},
      /src\/low\/c\.ts:1: imports \.\.\/top\/a\.js: a higher layer/,
    ],
    [
      'an import() of a higher layer',
      { 'low/c.ts': "export const c = () => import('../top/a.js');\n" },
      {},
      /src\/low\/c\.ts:1: imports \.\.\/top\/a\.js: a higher layer/,
    ],
    [
      'an import of a sibling in the same layer',
      { 'left/l.ts': "export { r } from '../right/r.js';\n", 'right/r.ts': 'export const r = 1;\n' },
      {},
      /src\/left\/l\.ts:1: imports \.\.\/right\/r\.js: a sibling in the same layer \(left, right\)/,
    ],
    ['a folder in no layer', { 'stray/s.ts': 'export const s = 1;\n' }, {}, /src\/stray: in no layer/],
  ];
  for (const [claim, files, pkg, message] of rows) {
    const out = await check(await demoRepo(t, files, pkg));
    t.equal(out.exitCode, 1, `${claim}: refused`);
    t.match(out.stderr, message, `${claim}: named`);
  }
  const fine = await check(
    await demoRepo(t, { 'top/d.ts': "import { b } from '../low/b.js';\nimport { a } from './a.js';\nexport const d = [a, b];\n" }),
  );
  t.equal(fine.exitCode, 0, `downward and within a folder: allowed (${fine.stderr})`);
  t.equal(rows.length, 6, 'every row ran');
});

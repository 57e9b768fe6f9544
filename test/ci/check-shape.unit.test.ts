// `pnpm check` refuses the code's shape going wrong (scripts/check-shape.mjs): a comment that
// names a file no longer here, and a source folder with no tests beside it, as well as the
// file and function lengths. Each on a small git work tree made for the test, beside the same
// tree put right; the real repository passes.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';

const script = path.join(repoRoot, 'scripts', 'check-shape.mjs');
const check = (repo?: string) => execa('node', [script, ...(repo ? [repo] : [])], { reject: false });

/** A git work tree with one package, tools/demo, holding these files (path -> text). */
async function demoRepo(t: Parameters<typeof tempDir>[0], files: Record<string, string>): Promise<string> {
  const repo = await tempDir(t, 'astest-shape-');
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(repo, name)), { recursive: true });
    await writeFile(path.join(repo, name), text);
  }
  await execa('git', ['init', '-q', repo]);
  await execa('git', ['-C', repo, 'add', '-A']);
  return repo;
}

const sound = {
  'tools/demo/src/index.ts': "// Wires run/step.ts (the one step) to the CLI.\nexport * from './run/step.js';\n",
  'tools/demo/src/run/step.ts': 'export const step = 1;\n',
  'tools/demo/test/run/step.test.ts': "import t from 'tap';\nt.pass('step');\n",
};

t.test('the repository as it is passes', async (t) => {
  const out = await check();
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stderr, /every file a comment names exists, and every source folder has tests/);
});

t.test(
  'a sound tree passes; the same tree with a comment naming a renamed file fails, naming the file, the line and the name',
  async (t) => {
    t.equal((await check(await demoRepo(t, sound))).exitCode, 0, 'the sound tree passes');
    const stale = await demoRepo(t, {
      ...sound,
      'tools/demo/src/index.ts': "// Wires run/old-step.ts (the one step) to the CLI.\nexport * from './run/step.js';\n",
    });
    const out = await check(stale);
    t.equal(out.exitCode, 1);
    t.match(out.stderr, /tools\/demo\/src\/index\.ts:1: a comment names run\/old-step\.ts, which is not a file here/);
  },
);

t.test('a source folder with no test folder of its name fails; one whose mirror holds no test fails too', async (t) => {
  const bare = await demoRepo(t, { ...sound, 'tools/demo/src/more/thing.ts': 'export const thing = 2;\n' });
  const out = await check(bare);
  t.equal(out.exitCode, 1);
  t.match(out.stderr, /tools\/demo\/src\/more\/: no tests in tools\/demo\/test\/more\//);
  const empty = await demoRepo(t, {
    ...sound,
    'tools/demo/src/more/thing.ts': 'export const thing = 2;\n',
    'tools/demo/test/more/helper.ts': 'export const h = 1;\n',
  });
  t.match((await check(empty)).stderr, /no tests in tools\/demo\/test\/more\//);
});

t.test("a function over 60 lines fails (lines packed to stay under it are a formatter's to undo)", async (t) => {
  const body = Array.from({ length: 61 }, (_, i) => `  const v${i} = ${i};`).join('\n');
  const long = await demoRepo(t, { ...sound, 'tools/demo/src/run/step.ts': `export function step(): number {\n${body}\n  return 0;\n}\n` });
  const out = await check(long);
  t.equal(out.exitCode, 1);
  t.match(out.stderr, /tools\/demo\/src\/run\/step\.ts:1: function step is 64 lines \(over 60\)/);
});

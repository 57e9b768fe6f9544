// `pnpm check` refuses one situation under two error codes (scripts/check-codes.mjs): two table
// rows with one meaning, one refusal message thrown with two codes, one named condition answered
// with two codes. Each on a small tree beside the same tree put right; the repository passes.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { repoRoot, tempDir } from '@agent-sandbox/testkit';

const script = path.join(repoRoot, 'scripts', 'check-codes.mjs');
const check = (repo?: string) => execa('node', [script, ...(repo ? [repo] : [])], { reject: false });

const table = (rows: string) => `export const errorCodes = {\n${rows}\n} as const satisfies Record<string, unknown>;\n`;
const soundTable =
  "  'relative-root': { usage: 'root is not an absolute path' },\n  'root-not-found': { unsafePath: 'the root does not exist' },";
const soundSource = [
  "export function a(root: string) { if (!isAbsolute(root)) throw new ToolError('usage', 'relative-root', `--root: expected an absolute path, got ${root}`); }",
  "export function b(root: string) { if (!isAbsolute(root)) throw new ToolError('usage', 'relative-root', `--root: expected an absolute path, got ${root}`); }",
  "export function c(out: { status: number }) { if (out.status !== 0) throw new ToolError('usage', 'relative-root', 'x'); if (out.status !== 0) throw new ToolError('unsafePath', 'root-not-found', 'y'); }",
].join('\n');

async function demoRepo(t: Parameters<typeof tempDir>[0], rows: string, source: string): Promise<string> {
  const repo = await tempDir(t, 'astest-codes-');
  await mkdir(path.join(repo, 'lib/shared/src'), { recursive: true });
  await mkdir(path.join(repo, 'tools/demo/src'), { recursive: true });
  await writeFile(path.join(repo, 'lib/shared/src/error-codes.ts'), table(rows));
  await writeFile(path.join(repo, 'tools/demo/src/index.ts'), `${source}\n`);
  return repo;
}

t.test('the repository as it is passes', async (t) => {
  const out = await check();
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.stderr, /each meaning, message and named condition has one code/);
});

t.test('a sound tree passes: one message and one condition under one code, generic results tested anywhere', async (t) => {
  const out = await check(await demoRepo(t, soundTable, soundSource));
  t.equal(out.exitCode, 0, out.stderr);
});

t.test('two rows of the table with one meaning fail, naming both codes', async (t) => {
  const out = await check(await demoRepo(t, `${soundTable}\n  'root-missing': { unsafePath: 'The root does not exist.' },`, soundSource));
  t.equal(out.exitCode, 1);
  t.match(out.stderr, /the meaning "the root does not exist" has root-not-found and root-missing/);
});

t.test('one message thrown with two codes fails, naming both places', async (t) => {
  const twice = soundSource.replace(
    "'usage', 'relative-root', `--root: expected an absolute path, got ${root}`); }\nexport function b",
    "'usage', 'bad-flag', `--root: expected an absolute path, got ${root}`); }\nexport function b",
  );
  const out = await check(await demoRepo(t, soundTable, twice));
  t.equal(out.exitCode, 1);
  t.match(
    out.stderr,
    /the message "--root: expected an absolute path, got \$\{\}" has bad-flag and relative-root \(bad-flag at tools\/demo\/src\/index\.ts:1; relative-root at tools\/demo\/src\/index\.ts:2\)/,
  );
});

t.test('one named condition answered with two codes fails', async (t) => {
  const twice = `${soundSource}\nexport function d(input: { root: string }) { if (!existsSync(input.root)) throw new ToolError('usage', 'no-such-workspace', 'gone'); }\nexport function e(input: { root: string }) { if (!existsSync(input.root)) throw new ToolError('usage', 'no-kept-store', 'none'); }`;
  const out = await check(await demoRepo(t, soundTable, twice));
  t.equal(out.exitCode, 1);
  t.match(out.stderr, /the condition "!existsSync\(input\.root\)" has no-such-workspace and no-kept-store/);
});

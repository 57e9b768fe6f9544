// yargs (most of a tool's start) is loaded only where argv is parsed: not by a tool started with
// no argument, not by the launcher's sentinel, and it is not in the image's bundles (cred-stage's
// container side and egress-relay run on the image's node at every session start).
import t from 'tap';
import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '@agent-sandbox/testkit';

const hook = path.join(repoRoot, 'test', 'startup', 'fixtures', 'yargs-throws.mjs');
const shared = path.join(repoRoot, 'lib', 'shared', 'dist', 'index.js');

/** Runs an ES module snippet with yargs made to throw when loaded. */
async function withoutYargs(code: string) {
  return await execa(process.execPath, ['--import', hook, '--input-type=module', '-e', code], {
    reject: false,
    cwd: repoRoot,
    stripFinalNewline: false,
  });
}

const toolWithDefault = `{ name: 't', summary: 's', commands: [{ name: '$0', describe: 'd', run: async () => ({ output: { ok: true } }) }] }`;
const io = `{ readStdin: async () => '', stdinIsTTY: true, stdoutIsTTY: false, env: {}, log: (l) => console.error(l) }`;

t.test('a tool started with no argument runs without loading yargs', async (t) => {
  const out = await withoutYargs(
    `const { main } = await import(${JSON.stringify(shared)}); const r = await main(${toolWithDefault}, [], ${io}); process.stdout.write(r.output); process.exitCode = r.exitCode;`,
  );
  t.equal(out.exitCode, 0, out.stderr);
  t.equal(out.stdout, '{"ok":true}\n');
});

t.test('the same tool given an argument loads yargs (so the check above can fail)', async (t) => {
  const out = await withoutYargs(
    `const { main } = await import(${JSON.stringify(shared)}); const r = await main(${toolWithDefault}, ['--help'], ${io}); process.exitCode = r.exitCode;`,
  );
  t.equal(out.exitCode, 91);
  t.match(out.stderr, /yargs was loaded/);
});

t.test("the launcher's sentinel never loads yargs", async (t) => {
  // With no arguments it loads its whole module graph, then returns: the import graph is what is checked.
  const out = await execa(process.execPath, ['--import', hook, path.join(repoRoot, 'tools', 'agent-sandbox', 'dist', 'sentinel-main.js')], {
    reject: false,
  });
  t.equal(out.exitCode, 0, out.stderr);
  t.notMatch(out.stderr, /yargs/);
});

t.test("the image's bundles (cred-stage's container side, egress-relay) hold no yargs", async (t) => {
  const bundles = ['cred-stage', 'egress-relay'].map((name) => path.join(repoRoot, 'image', 'build', 'bin', name));
  for (const file of bundles) {
    t.ok(existsSync(file), `${file} is built (pnpm run build)`);
    t.notMatch(readFileSync(file, 'utf8'), /\byargs\b|YargsInstance/, path.basename(file));
  }
  t.equal(bundles.length, 2, 'every bundle was read');
});

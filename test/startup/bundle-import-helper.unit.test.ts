// The bundles have no import() of their own (scripts/bundle-bins.mjs): the launcher's shim
// compiles its bundle with node's vm for the code cache (lib/shared/src/code-cache.cts), and
// code compiled so cannot import() in node 20. The one lazy package (execa, for the ssh
// dispatch) is loaded through the helper beside the bundle, and that works from vm code.
import t from 'tap';
import { execa } from 'execa';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '@agent-sandbox/testkit';

const tools = path.join(repoRoot, 'tools');
/** Every bundle of every tool (the bins' and the launcher's sentinel's). */
const bundles = readdirSync(tools).flatMap((name) => {
  try {
    const dist = path.join(tools, name, 'dist');
    return readdirSync(dist)
      .filter((file) => file.endsWith('.bundle.cjs'))
      .map((file) => path.join(dist, file));
  } catch {
    return [];
  }
});

t.test('no bundle has an import() of its own', async (t) => {
  t.ok(bundles.length >= 10, `${bundles.length} bundles read (pnpm build makes them)`);
  for (const file of bundles) t.notMatch(readFileSync(file, 'utf8'), /\bimport\(/, path.basename(file));
});

t.test("the launcher's bundle, compiled with vm as its shim does, loads execa through its helper", async (t) => {
  const bundle = path.join(tools, 'agent-sandbox', 'dist', 'agent-sandbox.bundle.cjs');
  t.match(readFileSync(bundle, 'utf8'), /__importExternal\("execa"\)/);
  const code = `
    const vm = require('node:vm'), fs = require('node:fs'), path = require('node:path');
    const { Module, createRequire } = require('node:module');
    const file = ${JSON.stringify(bundle)};
    const text = fs.readFileSync(file, 'utf8') + '\\nmodule.exports.viaHelper = () => __importExternal("execa");';
    const bundle = new Module(file);
    new vm.Script(Module.wrap(text), { filename: file }).runInThisContext()
      .call(bundle.exports, bundle.exports, createRequire(file), bundle, file, path.dirname(file));
    bundle.exports.viaHelper().then((m) => process.stdout.write(typeof m.execa));
  `;
  const out = await execa(process.execPath, ['-e', code], { reject: false, cwd: repoRoot });
  t.equal(out.stdout, 'function', out.stderr);
});

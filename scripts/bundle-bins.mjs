#!/usr/bin/env node
// Bundles each tool's built entry (tools/<name>/dist/cli.js, after `tsc -b`) with everything it
// imports into one CommonJS file, tools/<name>/dist/<name>.bundle.cjs, which the bin shim
// requires (lib/shared/src/bin-entry.cts). Why, measured on these machines (node -e 0 ~23 ms):
// - loading ~80 ES modules cost a tool more than node's own start; one file costs a fraction;
// - an ES module entry starts node's module loader (~3.5 ms); a CommonJS one does not;
// - TypeBox, which builds the contract schemas, was ~5 ms of every start: here each schema
//   module (lib/shared/dist/schemas/*.js) is evaluated at build time and replaced by its
//   plain JSON, which the run-time validator (lib/shared/src/validate.ts) reads, so TypeBox
//   is not in any bundle. lib/shared/test/validate-differential.test.ts holds the validator
//   to TypeBox's own answers on those same JSON objects.
// What is imported lazily (yargs: --help and refusals; execa: off the session path) is not in
// that file: each such package is its own ES module bundle, dist/vendor/<package>.mjs, which
// node loads only when the import runs, so the common path neither parses nor compiles it.
// Beside each bundle, <name>.bundle.json lists the repo's own files it was made from (relative
// to dist/): the shim runs the bundle only while it is at least as new as each of them.
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tools = readdirSync(path.join(repo, 'tools')).filter((name) =>
  existsSync(path.join(repo, 'tools', name, 'dist', 'cli.js')) && existsSync(path.join(repo, 'tools', name, 'bin', name)),
);
const schemaModule = /[\\/]lib[\\/]shared[\\/]dist[\\/]schemas[\\/][^\\/]+\.js$/;
/** Packages our code imports only with import(); they must never be imported statically. */
const lazyPackages = ['yargs', 'execa'];

/** Replaces each contract schema module by the JSON of its exports (see above). */
const schemasAsJson = {
  name: 'schemas-as-json',
  setup(bundle) {
    bundle.onLoad({ filter: schemaModule }, async (args) => {
      const exported = await import(pathToFileURL(args.path).href);
      const lines = Object.entries(exported).map(([name, value]) => {
        if (value === null || typeof value !== 'object') {
          throw new Error(`${args.path}: export ${name} is not a schema object; schema modules export only schemas`);
        }
        return `export const ${name} = ${JSON.stringify(value)};`;
      });
      return { contents: `${lines.join('\n')}\n`, loader: 'js' };
    });
  },
};

/** Points each import() of a lazy package at its vendor bundle, and notes which were used. */
function lazyPackagesAsVendorFiles(used) {
  return {
    name: 'lazy-packages-as-vendor-files',
    setup(bundle) {
      const filter = new RegExp(`^(${lazyPackages.join('|')})$`);
      bundle.onResolve({ filter }, (args) => {
        if (args.kind !== 'dynamic-import') {
          return { errors: [{ text: `${args.path} is imported statically by ${args.importer}; load it with import() so the common path does not pay for it` }] };
        }
        used.add(args.path);
        return { path: `./vendor/${args.path}.mjs`, external: true };
      });
    },
  };
}

for (const name of tools) {
  const dist = path.join(repo, 'tools', name, 'dist');
  // Leftovers of the earlier ES module bundles.
  rmSync(path.join(dist, 'bundle-chunks'), { recursive: true, force: true });
  rmSync(path.join(dist, `${name}.bundle.mjs`), { force: true });
  const outfile = path.join(dist, `${name}.bundle.cjs`);
  const used = new Set();
  const result = await build({
    entryPoints: [path.join(dist, 'cli.js')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [schemasAsJson, lazyPackagesAsVendorFiles(used)],
    // A dependency written as an ES module may read import.meta.url; in one CommonJS file
    // that is the bundle's own URL.
    define: { 'import.meta.url': '__bundleUrl' },
    banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  const bundled = Object.keys(result.metafile.inputs);
  if (bundled.some((file) => file.includes('@sinclair/typebox') || file.includes('@sinclair+typebox'))) {
    throw new Error(`${name}: TypeBox ended up in the bundle; a run-time module imports it (only schema modules may)`);
  }
  const inputs = bundled
    .map((file) => path.resolve(repo, file))
    .filter((file) => !file.split(path.sep).includes('node_modules'))
    .map((file) => path.relative(dist, file));
  rmSync(path.join(dist, 'vendor'), { recursive: true, force: true });
  for (const pkg of used) {
    await build({
      entryPoints: { [pkg]: pkg },
      absWorkingDir: path.join(repo, 'lib', 'shared'), // where the lazy packages are dependencies
      outdir: path.join(dist, 'vendor'),
      outExtension: { '.js': '.mjs' },
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      legalComments: 'none',
      logLevel: 'warning',
      // CommonJS dependencies (cross-spawn under execa) call require() for node builtins.
      banner: { js: "import { createRequire as __vendorRequire } from 'node:module'; const require = __vendorRequire(import.meta.url);" },
    });
  }
  writeFileSync(path.join(dist, `${name}.bundle.json`), `${JSON.stringify({ inputs }, null, 1)}\n`);
  console.log(`bundled ${path.relative(repo, outfile)} (${inputs.length} own files${used.size ? `; on demand: ${[...used].map((p) => `vendor/${p}.mjs`).join(', ')}` : ''})`);
}

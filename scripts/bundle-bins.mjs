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
// that file: each such package is its own CommonJS bundle, dist/vendor/<package>.cjs, required
// only when the import() runs, so the common path neither parses nor compiles it. (esbuild
// rewrites each import() into a require(): the bundles hold no import(), which node 20 cannot
// run in code compiled with a code cache; see bin-entry.cts.)
// Beside each bundle, <name>.bundle.cjs.cache holds V8's code cache for it (compiling the
// launcher's bundle from source cost ~7 ms, with the cache ~4), written by a fresh node process
// that loads the bundle the way the shim does (lib/shared/src/bin-entry.cts, writeCodeCache).
// And <name>.bundle.json lists the build records (tsconfig.tsbuildinfo) of the packages it was
// made from (relative to dist/): the shim runs the bundle only while it is at least as new as
// each of them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tools = readdirSync(path.join(repo, 'tools')).filter((name) =>
  existsSync(path.join(repo, 'tools', name, 'dist', 'cli.js')) && existsSync(path.join(repo, 'tools', name, 'bin', name)),
);
/** Packages our code imports only with import(); they must never be imported statically. */
const lazyPackages = ['execa'];

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
        return { path: `./vendor/${args.path}.cjs`, external: true };
      });
    },
  };
}

/** Each lazy package bundled once (every tool that uses it gets a copy in its own dist/vendor). */
const vendorBundles = new Map();
function vendorBundle(pkg) {
  if (!vendorBundles.has(pkg)) {
    // The vendor file's exports are what `await import(pkg)` gave the ES module code: the
    // package's namespace, with its default export as module.exports when it has one (esbuild
    // reads a required module.exports as the default export in node mode: yargs).
    const built = build({
      stdin: { contents: `const ns = require(${JSON.stringify(pkg)});\nmodule.exports = ns.default ?? ns;\n`, resolveDir: path.join(repo, 'lib', 'shared'), loader: 'js' },
      write: false,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      legalComments: 'none',
      logLevel: 'warning',
      define: { 'import.meta.url': '__bundleUrl' },
      banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
    }).then((result) => result.outputFiles[0].contents);
    vendorBundles.set(pkg, built);
  }
  return vendorBundles.get(pkg);
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
    plugins: [lazyPackagesAsVendorFiles(used)],
    // A dependency written as an ES module may read import.meta.url; in one CommonJS file
    // that is the bundle's own URL.
    define: { 'import.meta.url': '__bundleUrl' },
    banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
    // import() becomes Promise.resolve().then(() => require()).
    supported: { 'dynamic-import': false },
  });
  const bundled = Object.keys(result.metafile.inputs);
  if (bundled.some((file) => file.includes('@sinclair/typebox') || file.includes('@sinclair+typebox'))) {
    throw new Error(`${name}: TypeBox ended up in the bundle; a run-time module imports it (only schema modules may)`);
  }
  // The bundle is fresh while it is newer than the build record (tsconfig.tsbuildinfo, which
  // `tsc -b` rewrites whenever it emits) of each package it was built from: a handful of stats
  // at start instead of one per source file (85 for the launcher).
  const packages = new Set(
    bundled
      .map((file) => path.resolve(repo, file))
      .filter((file) => !file.split(path.sep).includes('node_modules'))
      .map((file) => file.slice(0, file.lastIndexOf(`${path.sep}dist${path.sep}`))),
  );
  const inputs = [...packages].sort().map((dir) => {
    const record = path.join(dir, 'tsconfig.tsbuildinfo');
    if (!existsSync(record)) throw new Error(`${name}: ${record} is missing; build with \`tsc -b\` first`);
    return path.relative(dist, record);
  });
  rmSync(path.join(dist, 'vendor'), { recursive: true, force: true });
  for (const pkg of used) {
    mkdirSync(path.join(dist, 'vendor'), { recursive: true });
    writeFileSync(path.join(dist, 'vendor', `${pkg}.cjs`), await vendorBundle(pkg));
  }
  const binEntry = path.join(repo, 'lib', 'shared', 'dist', 'bin-entry.cjs');
  const cache = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(require(process.argv[1]).writeCodeCache(process.argv[2])))', binEntry, outfile], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  if (cache.status !== 0) throw new Error(`${name}: writing the code cache failed: ${cache.stderr}`);
  writeFileSync(path.join(dist, `${name}.bundle.json`), `${JSON.stringify({ inputs }, null, 1)}\n`);
  console.log(`bundled ${path.relative(repo, outfile)} (${inputs.length} packages, code cache ${cache.stdout} bytes${used.size ? `; on demand: ${[...used].map((p) => `vendor/${p}.cjs`).join(', ')}` : ''})`);
}

#!/usr/bin/env node
// Bundles each tool's built entry (tools/<name>/dist/cli.js, after `tsc -b`) with everything it
// imports into one CommonJS file, tools/<name>/dist/<name>.bundle.cjs, which the bin shim
// requires (lib/shared/src/bin-entry.cts). Why, measured (docs/performance.md):
// - the unbundled ES modules (ours, TypeBox's, ~100 files) cost a tool start several times
//   node's own; one file costs a fraction;
// - a CommonJS entry does not start node's ES module loader (~10 ms here).
// Run-time code imports the generated validators, never the TypeBox schema modules, so TypeBox
// is in no bundle (checked below). execa, which only the launcher's ssh dispatch loads and only
// with import(), stays outside the bundle: node resolves it from the tool's own node_modules.
// yargs is in the bundle, behind the import() of lib/shared's parse-argv: esbuild wraps what a
// dynamic import loads in a function run on the first import(), so a start that parses no argv
// only reads its text (checked below: checkParserLazy).
// A bundle has no import() of its own: a shim may compile it with node's vm (the launcher's, with
// its code cache: lib/shared/src/code-cache.cts), and code compiled so cannot import() in node 20
// without a flag. Each import() of a lazy package becomes a call of <name>.import.cjs, written
// beside the bundle, an ordinary CommonJS module whose import() resolves from the same directory.
// Beside each bundle, <name>.bundle.json lists the build records (tsconfig.tsbuildinfo) of the
// packages it was made from (relative to dist/): the shim runs the bundle only while it is at
// least as new as each of them.
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tools = readdirSync(path.join(repo, 'tools')).filter(
  (name) => existsSync(path.join(repo, 'tools', name, 'dist', 'cli.js')) && existsSync(path.join(repo, 'tools', name, 'bin', name)),
);
/** Packages our code may load only with import() (large, and off every tool's common path). */
const lazyPackages = ['execa'];

/** Leaves each lazy package to node's own import() at run time; a static import is an error. */
const lazyPackagesExternal = {
  name: 'lazy-packages-external',
  setup(bundle) {
    bundle.onResolve({ filter: new RegExp(`^(${lazyPackages.join('|')})$`) }, (args) => {
      if (args.kind !== 'dynamic-import') {
        return {
          errors: [
            {
              text: `${args.path} is imported statically by ${args.importer}; load it with import() so the common path does not pay for it`,
            },
          ],
        };
      }
      return { path: args.path, external: true };
    });
  },
};

/**
 * string-width as yargs' help layout (cliui, wrap-ansi) calls it, made lazy: the package makes an
 * Intl.Segmenter when it loads, and node takes 35-50 ms to make one here (ICU's break data),
 * more than node's own start, paid by every start that loads yargs. Each import of it gets a
 * wrapper that answers printable ASCII (all our help text is) with its length, as string-width 8's
 * own fast path does, and requires the package the importer would have had for anything else.
 */
const stringWidthLazy = {
  name: 'string-width-lazy',
  setup(bundle) {
    bundle.onResolve({ filter: /^string-width$/ }, async (args) => {
      if (args.pluginData === 'real') return undefined; // this plugin's own lookup, below
      const real = await bundle.resolve(args.path, {
        resolveDir: args.resolveDir,
        kind: args.kind,
        importer: args.importer,
        pluginData: 'real',
      });
      return real.errors.length > 0 ? { errors: real.errors } : { path: real.path, namespace: 'string-width-lazy' };
    });
    bundle.onLoad({ filter: /.*/, namespace: 'string-width-lazy' }, (args) => ({
      loader: 'js',
      resolveDir: path.dirname(args.path),
      contents: [
        'let real;',
        'module.exports = function stringWidth(text, options) {',
        "  if (typeof text === 'string' && /^[\\x20-\\x7e]*$/.test(text)) return text.length;",
        `  real ??= require(${JSON.stringify(args.path)}).default;`,
        '  return real(text, options);',
        '};',
      ].join('\n'),
    }));
  },
};

/**
 * Turns the bundle's import() of lazy packages into calls of its import helper; any other
 * import() left in the bundle is an error.
 */
function importThroughHelper(name, outfile) {
  const quoted = lazyPackages.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  const text = readFileSync(outfile, 'utf8').replace(new RegExp(`\\bimport\\((["'])(${quoted})\\1\\)`, 'g'), '__importExternal($1$2$1)');
  if (/\bimport\(/.test(text)) throw new Error(`${path.basename(outfile)}: an import() the import helper does not serve`);
  writeFileSync(outfile, text);
  writeFileSync(
    path.join(path.dirname(outfile), `${name}.import.cjs`),
    `// Generated by scripts/bundle-bins.mjs: the bundle's import() of ${lazyPackages.join(', ')}, from this directory.\nmodule.exports = (specifier) => import(specifier);\n`,
  );
}

/**
 * The argv parser (lib/shared's parse-argv, which imports yargs) may be reached only through
 * import(), so a start that parses no argv never runs it; yargs only from there.
 */
function checkParserLazy(name, metafile) {
  for (const [file, input] of Object.entries(metafile.inputs)) {
    for (const imported of input.imports) {
      const parser = imported.path.endsWith('lib/shared/dist/parse-argv.js');
      const yargs = imported.path.includes('/yargs@') && !file.includes('/node_modules/');
      if ((parser && imported.kind !== 'dynamic-import') || (yargs && !file.endsWith('lib/shared/dist/parse-argv.js'))) {
        throw new Error(
          `${name}: ${file} imports ${imported.path} (${imported.kind}); only import() of lib/shared's parse-argv may load yargs`,
        );
      }
    }
  }
}

/**
 * dist/<out>.bundle.cjs from dist/<entry>.js, with <out>.bundle.json beside it: the build
 * records (tsconfig.tsbuildinfo) of the packages it was made from, relative to dist/.
 */
async function bundleEntry(name, entry, out) {
  const dist = path.join(repo, 'tools', name, 'dist');
  const outfile = path.join(dist, `${out}.bundle.cjs`);
  const result = await build({
    entryPoints: [path.join(dist, `${entry}.js`)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
    // A module written as an ES module reads import.meta.url (yargs' platform shim, code-dir.ts);
    // in one CommonJS file that is the bundle's own URL.
    define: { 'import.meta.url': '__bundleUrl' },
    banner: {
      js: [
        "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;",
        `const __importExternal = (specifier) => require(require('node:path').join(__dirname, '${name}.import.cjs'))(specifier);`,
      ].join('\n'),
    },
    plugins: [lazyPackagesExternal, stringWidthLazy],
  });
  checkParserLazy(out, result.metafile);
  importThroughHelper(name, outfile);
  const bundled = Object.keys(result.metafile.inputs);
  if (bundled.some((file) => file.includes('@sinclair/typebox') || file.includes('@sinclair+typebox'))) {
    throw new Error(`${out}: TypeBox ended up in the bundle; a run-time module imports a schema module (import its validator instead)`);
  }
  // The bundle is fresh while it is newer than the build record (tsconfig.tsbuildinfo, which
  // `tsc -b` rewrites whenever it emits) of each package it was built from: a handful of stats
  // at start instead of one per source file.
  const packages = new Set(
    bundled
      .map((file) => path.resolve(repo, file))
      .filter((file) => !file.split(path.sep).includes('node_modules'))
      .map((file) => file.slice(0, file.lastIndexOf(`${path.sep}dist${path.sep}`))),
  );
  const inputs = [...packages].sort().map((dir) => {
    const record = path.join(dir, 'tsconfig.tsbuildinfo');
    if (!existsSync(record)) throw new Error(`${out}: ${record} is missing; build with \`tsc -b\` first`);
    return path.relative(dist, record);
  });
  writeFileSync(path.join(dist, `${out}.bundle.json`), `${JSON.stringify({ inputs }, null, 1)}\n`);
  console.log(`bundled ${path.relative(repo, outfile)} (${inputs.length} packages)`);
}

for (const name of tools) {
  const dist = path.join(repo, 'tools', name, 'dist');
  // Leftovers of the earlier scheme (V8 code cache, vendor files).
  rmSync(path.join(dist, 'vendor'), { recursive: true, force: true });
  rmSync(path.join(dist, `${name}.bundle.cjs.cache`), { force: true });
  await bundleEntry(name, 'cli', name);
}
// The launcher's sentinel runs only after its launcher died, to stop the container, so its
// node start is on that path: in the VM tier's guest 17 s passed from the launcher's death to
// the unbundled sentinel's first `podman rm` (tools/agent-sandbox/src/recovery/sentinel.ts).
await bundleEntry('agent-sandbox', 'sentinel-main', 'sentinel-main');

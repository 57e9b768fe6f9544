#!/usr/bin/env node
// Bundles each tool's built entry (tools/<name>/dist/cli.js, after `tsc -b`) with everything it
// imports into one file, tools/<name>/dist/<name>.bundle.mjs: loading ~80 ES modules costs a tool
// more than node's own start; one file costs a fraction of it (plus lazily loaded chunks). Beside it,
// <name>.bundle.json lists the repo's own files the bundle was made from (relative to dist/):
// the bin shim runs the bundle only while it is at least as new as each of them
// (lib/shared/src/bin-entry.ts), so a package rebuilt with `tsc -b` alone never runs stale code.
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tools = readdirSync(path.join(repo, 'tools')).filter((name) =>
  existsSync(path.join(repo, 'tools', name, 'dist', 'cli.js')) && existsSync(path.join(repo, 'tools', name, 'bin', name)),
);

for (const name of tools) {
  const dist = path.join(repo, 'tools', name, 'dist');
  const outfile = path.join(dist, `${name}.bundle.mjs`);
  rmSync(path.join(dist, 'bundle-chunks'), { recursive: true, force: true });
  const result = await build({
    entryPoints: { [`${name}.bundle`]: path.join(dist, 'cli.js') },
    outdir: dist,
    outExtension: { '.js': '.mjs' },
    // What is imported lazily (yargs: only for --help and refusals) goes to its own chunk,
    // so the common path neither loads nor compiles it.
    splitting: true,
    chunkNames: 'bundle-chunks/[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
    // CommonJS dependencies (cross-spawn under execa) call require() for node builtins.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  });
  const inputs = Object.keys(result.metafile.inputs)
    .map((file) => path.resolve(repo, file))
    .filter((file) => !file.split(path.sep).includes('node_modules'))
    .map((file) => path.relative(dist, file));
  writeFileSync(path.join(dist, `${name}.bundle.json`), `${JSON.stringify({ inputs }, null, 1)}\n`);
  console.log(`bundled ${path.relative(repo, outfile)} (${inputs.length} own files)`);
}

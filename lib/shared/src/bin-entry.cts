/**
 * What a tool's bin shim runs. CommonJS on purpose: the shims are CommonJS (tools/<name>/bin
 * has a package.json saying so), and so are the bundles, so the common path never starts
 * node's ES module loader (measured ~10 ms of a ~30 ms node start, docs/performance.md).
 * Imports only node builtins.
 *
 * The bundle (scripts/bundle-bins.mjs: tools/<name>/dist/<name>.bundle.cjs) runs while it is
 * at least as new as the build record (tsconfig.tsbuildinfo) of every package it was built
 * from (listed beside it in <name>.bundle.json); otherwise the unbundled ES module
 * dist/cli.js runs, so a package rebuilt with `tsc -b` alone never runs stale bundled code.
 * A shim that opts in compiles its bundle with a V8 code cache kept in the user's own state
 * (code-cache.cts says when one is used, and when it is refused).
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { Module, createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Script } from 'node:vm';
import { codeCacheDir, codeCacheSlot, readCodeCache, readSource, writeCodeCache } from './code-cache.cjs';
import { freshBundle } from './fresh-bundle.cjs';

export interface BinEntry {
  kind: 'bundle' | 'unbundled';
  /** Absolute path of the file to run. */
  file: string;
}

/** Which file runs for `tool`, given the shim's path (it may be reached through a symlink). */
export function binEntry(shimPath: string, tool: string): BinEntry {
  const dist = path.join(path.dirname(realpathSync(shimPath)), '..', 'dist');
  const bundle = freshBundle(dist, tool);
  return bundle ? { kind: 'bundle', file: bundle } : { kind: 'unbundled', file: path.join(dist, 'cli.js') };
}

interface ToolModule {
  run(): Promise<void>;
}

export interface BinOptions {
  /** Compile the bundle with a V8 code cache of the command (code-cache.cts). */
  codeCache?: boolean;
}

/** A compiled bundle, and what to do once the process ends (write its cache), if anything. */
interface Compiled {
  script: Script;
  atExit?: () => void;
}

/**
 * The CommonJS wrapper, as node's loader puts it around a module (Module.wrap), its head on the
 * module's first line so that line numbers stay the file's. readSource reads the bundle inside it.
 */
const wrapperHead = '(function (exports, require, module, __filename, __dirname) { ';
const wrapperTail = '\n});';

/** The bundle compiled with its cache, or undefined when it gets none (then plain `require`). */
function compileCached(file: string, tool: string): Compiled | undefined {
  const uid = process.getuid?.();
  const dir = codeCacheDir(process.env, tool);
  if (uid === undefined || dir === undefined) return undefined;
  const source = readSource(file, wrapperHead, wrapperTail);
  const slot = source === undefined ? undefined : codeCacheSlot(dir, process.argv[2], source);
  if (source === undefined || slot === undefined) return undefined;
  const cachedData = readCodeCache(slot, uid);
  const script = new Script(source.text, { filename: file, cachedData });
  if (cachedData !== undefined && !script.cachedDataRejected) return { script };
  return { script, atExit: () => writeCodeCache(slot, script.createCachedData(), uid) };
}

/** Requires the bundle, through its code cache when the shim asks for one and one may be used. */
function requireBundle(file: string, tool: string, options: BinOptions): ToolModule {
  let compiled: Compiled | undefined;
  try {
    compiled = options.codeCache === true ? compileCached(file, tool) : undefined;
  } catch {
    compiled = undefined; // any doubt: node's own require compiles it
  }
  if (compiled === undefined) return require(file) as ToolModule;
  const { atExit } = compiled;
  if (atExit !== undefined) {
    process.once('exit', () => {
      try {
        atExit();
      } catch {
        // no cache this time
      }
    });
  }
  const bundle = new Module(file, module);
  bundle.filename = file;
  const wrapper = compiled.script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(bundle.exports, bundle.exports, createRequire(file), bundle, file, path.dirname(file));
  bundle.loaded = true;
  return bundle.exports as ToolModule;
}

/** Loads the tool's entry and runs it; the only thing a bin shim calls. */
export function runBin(shimPath: string, tool: string, options: BinOptions = {}): void {
  const entry = binEntry(shimPath, tool);
  const loaded: Promise<ToolModule> =
    entry.kind === 'bundle'
      ? Promise.resolve().then(() => requireBundle(entry.file, tool, options))
      : (import(pathToFileURL(entry.file).href) as Promise<ToolModule>);
  loaded
    .then((cli) => cli.run())
    .catch((err: unknown) => {
      // Only a defect gets here (run() turns every refusal into a document and an exit code).
      process.stderr.write(`${tool}: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 91; // ExitCode.internal (this module imports only node builtins)
    });
}

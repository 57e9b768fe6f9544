/**
 * What a tool's bin shim runs. CommonJS on purpose: the shims are CommonJS (tools/<name>/bin
 * has a package.json saying so), and so are the bundles, so the common path never starts
 * node's ES module loader (measured: ~3.5 ms of a ~25 ms node start, plus its per-module
 * cost). Imports only node builtins.
 *
 * The bundle (scripts/bundle-bins.mjs: tools/<name>/dist/<name>.bundle.cjs) runs while it is
 * at least as new as the build record (tsconfig.tsbuildinfo) of every package it was built
 * from (listed beside it in <name>.bundle.json); otherwise the unbundled ES module
 * dist/cli.js runs, so a package rebuilt with `tsc -b` alone never runs stale bundled code.
 */
import { readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

export interface BinEntry {
  kind: 'bundle' | 'unbundled';
  /** Absolute path of the file to run. */
  file: string;
}

/** Which file runs for `tool`, given the shim's path (it may be reached through a symlink). */
export function binEntry(shimPath: string, tool: string): BinEntry {
  const dist = path.join(path.dirname(realpathSync(shimPath)), '..', 'dist');
  try {
    const bundle = path.join(dist, `${tool}.bundle.cjs`);
    const built = statSync(bundle).mtimeMs;
    const { inputs } = JSON.parse(readFileSync(path.join(dist, `${tool}.bundle.json`), 'utf8')) as { inputs: string[] };
    if (inputs.length > 0 && inputs.every((file) => statSync(path.join(dist, file)).mtimeMs <= built)) {
      return { kind: 'bundle', file: bundle };
    }
  } catch {
    // no bundle, no manifest, or a build record is gone: the unbundled entry
  }
  return { kind: 'unbundled', file: path.join(dist, 'cli.js') };
}

interface ToolModule {
  run(): Promise<void>;
}

/** The code cache V8 wrote for a bundle (see writeCodeCache), beside it. */
const codeCacheOf = (bundle: string) => `${bundle}.cache`;

/**
 * Compiles a CommonJS bundle the way node's loader would, but with V8's code cache when one
 * is there: compiling the launcher's ~200 KB bundle from source cost ~7 ms, with the cache ~4
 * (measured here). V8 checks the cache against the source, its own version and flags, and
 * compiles from source when it does not match, so a stale cache only costs the time it would
 * have saved. The bundles require only node builtins and their own vendor files
 * (scripts/bundle-bins.mjs), and hold no import(): node 20 cannot run import() in code
 * compiled this way (measured: with a code cache the import callback is lost, without one it
 * needs --experimental-vm-modules).
 */
function compileBundle(file: string, cachedData: Buffer | undefined): { script: vm.Script; load(): ToolModule } {
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${readFileSync(file, 'utf8')}\n})`;
  const script = new vm.Script(wrapped, {
    filename: file,
    ...(cachedData === undefined ? {} : { cachedData }),
  });
  return {
    script,
    load() {
      const module = { exports: {} as ToolModule };
      // Builtins, and the bundle's own vendor files ("./vendor/<package>.cjs") beside it.
      const bundleRequire = (id: string): unknown => (id.startsWith('./') ? require(path.join(path.dirname(file), id)) : require(id));
      (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, bundleRequire, module, file, path.dirname(file));
      return module.exports;
    },
  };
}

function loadBundle(file: string): ToolModule {
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(codeCacheOf(file));
  } catch {
    // no cache: compile from source
  }
  return compileBundle(file, cachedData).load();
}

/**
 * Writes the code cache for a bundle, after loading it (so the functions its top level ran
 * are in it too). `pnpm build` calls this in a fresh node process per tool.
 */
export function writeCodeCache(file: string): number {
  const compiled = compileBundle(file, undefined);
  compiled.load();
  const data = compiled.script.createCachedData();
  writeFileSync(codeCacheOf(file), data);
  return data.length;
}

/** Loads the tool's entry and runs it; the only thing a bin shim calls. */
export function runBin(shimPath: string, tool: string): void {
  const entry = binEntry(shimPath, tool);
  const loaded: Promise<ToolModule> =
    entry.kind === 'bundle'
      ? Promise.resolve(loadBundle(entry.file))
      : (import(pathToFileURL(entry.file).href) as Promise<ToolModule>);
  loaded
    .then((cli) => cli.run())
    .catch((err: unknown) => {
      // Only a defect gets here (run() turns every refusal into a document and an exit code).
      process.stderr.write(`${tool}: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 91; // ExitCode.internal (this module imports only node builtins)
    });
}

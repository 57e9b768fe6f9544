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
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface BinEntry {
  kind: 'bundle' | 'unbundled';
  /** Absolute path of the file to run. */
  file: string;
}

/**
 * dist/<name>.bundle.cjs when it is fresh (at least as new as each build record its
 * <name>.bundle.json lists), else undefined. The tools' bins and the launcher's sentinel
 * (its bundled cleanup, scripts/bundle-bins.mjs) ask it.
 */
export function freshBundle(dist: string, name: string): string | undefined {
  try {
    const bundle = path.join(dist, `${name}.bundle.cjs`);
    const built = statSync(bundle).mtimeMs;
    const { inputs } = JSON.parse(readFileSync(path.join(dist, `${name}.bundle.json`), 'utf8')) as { inputs: string[] };
    if (inputs.length > 0 && inputs.every((file) => statSync(path.join(dist, file)).mtimeMs <= built)) return bundle;
  } catch {
    // no bundle, no manifest, or a build record is gone: the unbundled entry
  }
  return undefined;
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

/** Loads the tool's entry and runs it; the only thing a bin shim calls. */
export function runBin(shimPath: string, tool: string): void {
  const entry = binEntry(shimPath, tool);
  const loaded: Promise<ToolModule> =
    entry.kind === 'bundle'
      ? Promise.resolve().then(() => require(entry.file) as ToolModule)
      : (import(pathToFileURL(entry.file).href) as Promise<ToolModule>);
  loaded
    .then((cli) => cli.run())
    .catch((err: unknown) => {
      // Only a defect gets here (run() turns every refusal into a document and an exit code).
      process.stderr.write(`${tool}: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 91; // ExitCode.internal (this module imports only node builtins)
    });
}

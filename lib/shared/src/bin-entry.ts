/**
 * Which file a tool's bin shim runs: the tool's bundle (scripts/bundle-bins.mjs; one file
 * loads in a fraction of the time of ~80 modules) while it is at least as new as every file
 * of this repo it was built from, otherwise dist/cli.js. A package rebuilt with `tsc -b`
 * after the bundle step therefore never runs stale bundled code. Imports only node:fs and node:url.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * The URL to import for `tool`, given the shim's path (process.argv[1]: the shim is always the
 * main script, and may be reached through a symlink). Shims do not use import.meta: under a
 * require hook (tap) an extensionless file is loaded as CommonJS.
 */
export function binEntry(shimPath: string, tool: string): string {
  const dist = new URL('../dist/', pathToFileURL(realpathSync(shimPath)));
  try {
    const bundle = new URL(`${tool}.bundle.mjs`, dist);
    const built = statSync(bundle).mtimeMs;
    const { inputs } = JSON.parse(readFileSync(new URL(`${tool}.bundle.json`, dist), 'utf8')) as { inputs: string[] };
    if (inputs.length > 0 && inputs.every((file) => statSync(new URL(file, dist)).mtimeMs <= built)) return bundle.href;
  } catch {
    // no bundle, no manifest, or one of its inputs is gone: the unbundled entry
  }
  return new URL('cli.js', dist).href;
}

/**
 * Whether a bundle made by scripts/bundle-bins.mjs may run: dist/<name>.bundle.cjs while it is
 * at least as new as each build record (tsconfig.tsbuildinfo) its <name>.bundle.json lists, so
 * a package rebuilt with `tsc -b` alone never runs stale bundled code. The tools' bin shims
 * (bin-entry.cts) and the launcher's sentinel (its bundled cleanup) ask it. A module of its own,
 * CommonJS like the shims, so the sentinel's caller does not carry the shim's code in its bundle.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** dist/<name>.bundle.cjs when it is fresh, else undefined. */
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

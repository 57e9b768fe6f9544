/**
 * The directory of the code that is running: a tool's dist/ directory whether it runs as the
 * unbundled ES modules (the caller's import.meta.url) or inside a CommonJS bundle, where
 * esbuild leaves import.meta empty and __dirname is the bundle's directory (also dist/).
 * Files that ship beside the code (the seccomp profile, the sentinel's entry) are found from
 * here, never from the environment.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function codeDir(importMetaUrl: string | undefined): string {
  if (importMetaUrl) return path.dirname(fileURLToPath(importMetaUrl));
  if (typeof __dirname === 'string') return __dirname;
  throw new Error('codeDir: neither import.meta.url nor __dirname is available');
}

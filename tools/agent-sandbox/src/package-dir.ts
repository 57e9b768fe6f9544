/**
 * The launcher's dist/ directory, where the sentinel's entry lies: from the bundle (CommonJS,
 * __dirname is dist/) and from the unbundled ES modules (this file is in dist/) alike.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function distDir(): string {
  return typeof __dirname === 'string' ? __dirname : path.dirname(fileURLToPath(import.meta.url));
}

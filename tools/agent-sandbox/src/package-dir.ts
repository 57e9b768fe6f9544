/** The launcher's dist/ directory, where the sentinel's entry lies (bundled or not). */
import { codeDir } from '@agent-sandbox/shared/code-dir';

export function distDir(): string {
  return codeDir(import.meta.url);
}

import { mkdtemp, rm } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { scratchDirPrefix } from '@agent-sandbox/shared/podman';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Anything with tap's teardown, so helpers need not import tap. */
export interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A fresh directory (realpath'd: /tmp may be a link) removed when the test ends, pass or fail. */
export async function tempDir(t: Teardown, prefix = 'agent-sandbox-test-'): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * podman scratch directories (lib/shared podmanScratchDir) that a process with this pid made
 * and left in a temporary directory (default /tmp: the launchers the tests start have no TMPDIR).
 */
export function scratchDirsOf(pid: number | undefined, tmp = '/tmp'): string[] {
  if (pid === undefined) return [];
  return readdirSync(tmp).filter((name) => name.startsWith(scratchDirPrefix(pid)));
}

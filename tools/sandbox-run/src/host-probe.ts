/**
 * The reads preflight makes, behind one small interface so tests can describe
 * another host (cgroup v2, a missing controller) and the real one is just fs.
 * Nothing here starts a process.
 */
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface HostProbe {
  /** Effective uid of the caller (0: rootful podman). */
  uid: number;
  env: NodeJS.ProcessEnv;
  /** File contents, or undefined when it cannot be read. */
  readFile(file: string): string | undefined;
  exists(file: string): boolean;
  /** True when `file` is an executable regular file. */
  isExecutable(file: string): boolean;
}

/** The real host; HOME comes from the password database, as podman gets it (shared podmanEnv). */
export const realHostProbe = (): HostProbe => ({
  uid: process.geteuid?.() ?? 0,
  env: { ...process.env, HOME: os.userInfo().homedir },
  readFile: (file) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
  },
  exists: (file) => existsSync(file),
  isExecutable: (file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  },
});

/** The first executable named `name` on PATH (or `name` itself when it has a slash). */
export function findExecutable(probe: HostProbe, name: string): string | undefined {
  if (name.includes('/')) return probe.isExecutable(name) ? name : undefined;
  const dirs = (probe.env['PATH'] || '/usr/local/bin:/usr/bin:/bin').split(':').filter(Boolean);
  for (const dir of [...dirs, '/usr/local/sbin', '/usr/sbin', '/sbin']) {
    const candidate = path.join(dir, name);
    if (probe.isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** The hard limit of one /proc/<pid>/limits row ("Max open files"); Infinity for unlimited. */
export function hardLimit(limitsText: string, row: string): number | undefined {
  const line = limitsText.split('\n').find((l) => l.startsWith(row));
  if (!line) return undefined;
  const fields = line.slice(row.length).trim().split(/\s+/);
  const hard = fields[1];
  if (hard === undefined) return undefined;
  return hard === 'unlimited' ? Infinity : Number(hard);
}

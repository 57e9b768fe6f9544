/**
 * What the disk ceiling's watchdog reads: `du` for what the session's directories hold (bytes
 * and inodes: files, directories, links), and statfs for what their filesystems have used, a
 * cheap system call that tells the watchdog when a walk is worth its cost.
 */
import { statSync, statfsSync } from 'node:fs';
import { captureCommand } from '@agent-sandbox/shared/capture';
import { systemPath } from '@agent-sandbox/shared/podman';

/** One du total under the directories (one filesystem, hard links once). */
async function duTotal(dirs: string[], unit: string[]): Promise<number> {
  const out = await captureCommand('du', ['-s', ...unit, '-x', '-c', '--', ...dirs], { env: { PATH: systemPath, LC_ALL: 'C' }, timeoutMs: 120_000 });
  const total = /^(\d+)\s+total$/m.exec(out.stdout);
  if (!total) throw new Error(`du failed (exit ${out.exitCode}): ${out.stderr.trim().split('\n').pop() ?? ''}`);
  return Number(total[1]);
}

/** Bytes allocated under the directories, counted by du. */
export async function duBytes(dirs: string[]): Promise<number> {
  return await duTotal(dirs, ['-B1']);
}

/** Inodes under the directories (every file, directory and link, the directories themselves included). */
export async function duInodes(dirs: string[]): Promise<number> {
  return await duTotal(dirs, ['--inodes']);
}

export interface FsUsed {
  bytes: number;
  inodes: number;
}

/** Used bytes and inodes of each distinct filesystem the directories are on. */
export function filesystemsUsed(dirs: string[]): Map<number, FsUsed> {
  const used = new Map<number, FsUsed>();
  for (const dir of dirs) {
    try {
      const dev = statSync(dir).dev;
      if (used.has(dev)) continue;
      const fs = statfsSync(dir);
      used.set(dev, { bytes: (fs.blocks - fs.bfree) * fs.bsize, inodes: fs.files - fs.ffree });
    } catch {
      // a directory that vanished grows nothing
    }
  }
  return used;
}

/** How much the filesystems grew between two reads (shrinking counts as nothing). */
export function grownSince(before: Map<number, FsUsed>, now: Map<number, FsUsed>): FsUsed {
  const grown = { bytes: 0, inodes: 0 };
  for (const [dev, used] of now) {
    const was = before.get(dev) ?? used;
    grown.bytes += Math.max(0, used.bytes - was.bytes);
    grown.inodes += Math.max(0, used.inodes - was.inodes);
  }
  return grown;
}

/** Free inodes of the filesystem holding `dir`; undefined where it has no fixed count (btrfs says 0 of 0). */
export function freeInodes(dir: string): number | undefined {
  const fs = statfsSync(dir);
  return fs.files > 0 ? fs.ffree : undefined;
}

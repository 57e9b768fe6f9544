/**
 * The session's sentinel: a process of its own session (setsid) that outlives a launcher
 * killed in any way (SIGKILL, the OOM killer, a lost ssh connection killing the receiver) and
 * then stops the container and removes what the session made, within seconds.
 *
 * It is a shell blocked reading a pipe whose only writer is the launcher: when the launcher
 * ends the session it writes "released" and the shell exits; when the launcher dies the
 * kernel closes the pipe, `read` returns at end of file, and the shell execs the cleanup
 * (sentinel-main, bundled) with the session's lock, which it inherited on fd 3, and its id's on fd 4,
 * still held. Waiting
 * costs a shell (about a megabyte), not a node process, per session.
 */
import path from 'node:path';
import type { Writable } from 'node:stream';
import { spawn } from 'node:child_process';
import { freshBundle } from '@agent-sandbox/shared/fresh-bundle';
import { systemPath } from '@agent-sandbox/shared/podman';
import type { HeldLock } from '@agent-sandbox/shared/flock';
import { distDir } from '../package-dir.js';

export interface Sentinel {
  /** The session ended here, normally: the sentinel exits without doing anything. */
  release(): void;
  pid: number | undefined;
}

const waitThenClean = 'IFS= read -r line; [ "$line" = released ] && exit 0; exec "$0" "$@"';

/**
 * The cleanup's entry: its bundle (scripts/bundle-bins.mjs) while it is fresh, as for the bins;
 * one file starts in a fraction of the time of its ~85 ES modules, and that start lies between
 * the launcher's death and the container's removal.
 */
export function sentinelEntry(dist = distDir()): string {
  return freshBundle(dist, 'sentinel-main') ?? path.join(dist, 'sentinel-main.js');
}

export function startSentinel(recordFile: string, root: string, lock: HeldLock, idLock: HeldLock): Sentinel {
  const child = spawn('/bin/sh', ['-c', waitThenClean, process.execPath, sentinelEntry(), recordFile, root], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore', lock.fd, idLock.fd],
    env: { PATH: systemPath, ...(process.env['HOME'] ? { HOME: process.env['HOME'] } : {}) },
    cwd: '/',
  });
  child.unref();
  const stdin = child.stdin as (Writable & { unref?: () => void }) | null;
  stdin?.on('error', () => undefined);
  stdin?.unref?.();
  let released = false;
  return {
    pid: child.pid,
    release() {
      if (released) return;
      released = true;
      stdin?.end('released\n');
    },
  };
}

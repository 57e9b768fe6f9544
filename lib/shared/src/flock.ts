/**
 * flock(2) on a file, taken by util-linux `flock` on a file descriptor this process opened and
 * keeps: the lock belongs to the open file, so the kernel releases it when the last process
 * holding that descriptor ends, however it ends (SIGKILL and the OOM killer included). A stale
 * lock cannot exist; a lock that can be taken means its holders are gone. The launcher's
 * workspace lock and its ledger rotation are taken this way.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { systemPath } from './podman.js';
import { ToolError } from './tool-error.js';

export interface HeldLock {
  fd: number;
  file: string;
  /** Removes the lock file and closes the descriptor (idempotent). */
  release(): void;
}

const busyStatus = 75;

/** flock --nonblock on an open descriptor: 'locked', 'busy', or throws when flock cannot run. */
function flockFd(fd: number): 'locked' | 'busy' {
  const out = spawnSync('flock', ['--nonblock', '--conflict-exit-code', String(busyStatus), '3'], {
    stdio: ['ignore', 'ignore', 'pipe', fd],
    env: { PATH: systemPath },
    timeout: 10_000,
  });
  if (out.status === 0) return 'locked';
  if (out.status === busyStatus) return 'busy';
  const why = out.error ? out.error.message : `exit ${out.status}: ${String(out.stderr ?? '').trim()}`;
  throw new ToolError('startFailed', 'lock-failed', `cannot lock ${fd}: util-linux flock failed (${why}); install util-linux`);
}

/**
 * Takes the lock of `file`, or returns undefined when another process holds it. The inode
 * check makes a lock on a file that was unlinked (by the previous owner's release) meaningless:
 * it is retried on the file now at that path.
 */
export function tryLock(file: string): HeldLock | undefined {
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const fd = openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    let state: 'locked' | 'busy';
    try {
      state = flockFd(fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    if (state === 'busy') {
      closeSync(fd);
      return undefined;
    }
    let current: number | undefined;
    try {
      current = statSync(file).ino;
    } catch {
      current = undefined;
    }
    if (current === fstatSync(fd).ino) return heldLock(fd, file);
    closeSync(fd);
  }
  throw new ToolError('startFailed', 'lock-failed', `cannot take the lock ${file}: it was replaced five times in a row`);
}

/** A lock this process holds on `fd` (taken here, or inherited by the sentinel). */
export function heldLock(fd: number, file: string): HeldLock {
  let open = true;
  return {
    fd,
    file,
    release() {
      if (!open) return;
      open = false;
      rmSync(file, { force: true });
      closeSync(fd);
    },
  };
}

/**
 * Whether some process holds a flock on `file` now, read from /proc/locks: unlike taking the
 * lock to see, this can never make the holder's own attempt fail (a launcher between opening
 * its lock file and locking it would otherwise see "busy").
 */
export function isLockHeld(file: string): boolean {
  let info;
  try {
    info = statSync(file);
  } catch {
    return false;
  }
  const major = Math.floor(info.dev / 256) & 0xfff;
  const minor = (info.dev & 0xff) | (Math.floor(info.dev / 4096) & 0xfff00);
  const id = `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${info.ino}`;
  let table = '';
  try {
    table = readFileSync('/proc/locks', 'utf8');
  } catch {
    return true; // cannot tell: treat as held, never touch it
  }
  return table.split('\n').some((line) => /\bFLOCK\b/.test(line) && line.split(/\s+/).includes(id));
}

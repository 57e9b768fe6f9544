/**
 * One session per workspace: a lock held by the launcher for the whole session, taken before
 * anything is staged, chowned, cleaned or created (a second launcher, local, over ssh or
 * `kube`, is refused with 92 naming the running session), and a record beside it that says
 * what the session made, so a sweep can clean up after an owner that died.
 *
 * The lock is flock(2) on <root>/sessions/<id>.lock, taken by util-linux `flock` on a file
 * descriptor this process opened and keeps: the lock belongs to the open file, so it is
 * released by the kernel when the last process holding that descriptor ends, however it ends
 * (SIGKILL and the OOM killer included). A stale lock therefore cannot exist; a lock that can
 * be taken means its owner (and its sentinel, which inherits the descriptor) is gone.
 */
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync, lstatSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ToolError } from '@agent-sandbox/shared';
import { systemPath } from '@agent-sandbox/shared/podman';
import type { SessionRecord } from './session-record.js';

export interface HeldLock {
  fd: number;
  file: string;
  /** Removes the lock file and closes the descriptor (idempotent). */
  release(): void;
}

const busyStatus = 75;

/** The sessions directory: a real directory owned by us, never a link a session could plant. */
export function ensureSessionsDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ToolError('unsafePath', 'root-not-writable', `cannot make ${dir} for the session's lock (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the root must be writable by the user who runs sessions`);
  }
  const info = lstatSync(dir);
  if (info.isSymbolicLink() || !info.isDirectory()) throw new ToolError('unsafePath', 'sessions-dir-unsafe', `${dir} is a symlink or not a directory`);
}

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

/** Who holds the lock, as the holder wrote it into the lock file right after taking it. */
export interface LockHolder {
  pid: number;
  user: string;
  host: string;
  since: string;
  purpose: string;
}

/** Writes the holder's note into the lock file through the held descriptor. */
export function noteHolder(lock: HeldLock, holder: LockHolder): void {
  try {
    const text = Buffer.from(`${JSON.stringify(holder)}\n`);
    ftruncateSync(lock.fd, 0);
    writeSync(lock.fd, text, 0, text.length, 0);
  } catch {
    // the note is for messages only; the lock is what counts
  }
}

function readHolder(file: string): LockHolder | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
}

/** The record of a running session, or undefined when there is none (or it cannot be read). */
export function readRecord(file: string): SessionRecord | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as SessionRecord;
  } catch {
    return undefined;
  }
}

/** Writes the record whole (a temp file renamed over it), so a reader never sees half. */
export function writeRecord(file: string, record: SessionRecord): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  writeFileSync(temp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  renameSync(temp, file);
}

/** The refusal for a busy workspace: who runs there, since when, in which container. */
export function busyError(sessionId: string, record: SessionRecord | undefined, holder?: LockHolder): ToolError {
  const who = record
    ? `session ${record.sessionId} (${record.line.runtime}) started ${record.startedAt} by ${record.user} on ${record.host}, launcher pid ${record.pid}, container ${record.containerName}`
    : holder
      ? `session ${sessionId} started ${holder.since} by ${holder.user} on ${holder.host}, launcher pid ${holder.pid} (${holder.purpose}; no container yet)`
      : `another launcher holds its lock (it is just starting)`;
  return new ToolError('busy', 'workspace-busy', `workspace ${sessionId} is busy: ${who}; wait for it to end, or stop it with \`podman stop ${record?.containerName ?? `agent-sandbox-${sessionId}`}\``, {
    sessionId,
    ...(record ? { running: { runId: record.runId, startedAt: record.startedAt, user: record.user, pid: record.pid, containerName: record.containerName } } : {}),
  });
}

/** Takes the workspace's lock or refuses (92) naming the session that holds it. */
export function lockWorkspace(lockFile: string, recordFile: string, sessionId: string, purpose = 'starting a session'): HeldLock {
  ensureSessionsDir(path.dirname(lockFile));
  const lock = tryLock(lockFile);
  if (!lock) throw busyError(sessionId, readRecord(recordFile), readHolder(lockFile));
  noteHolder(lock, { pid: process.pid, user: os.userInfo().username, host: os.hostname(), since: new Date().toISOString(), purpose });
  return lock;
}

/**
 * One session per workspace: a lock held by the launcher for the whole session, taken before
 * anything is staged, chowned, cleaned or created (a second launcher, local, over ssh or
 * `kube`, is refused with 92 naming the running session), and a record beside it that says
 * what the session made, so a sweep can clean up after an owner that died.
 *
 * The lock is flock(2) on <root>/sessions/<id>.lock (lib/shared/src/flock.ts): released by the
 * kernel when the last process holding its descriptor ends, however it ends, so a stale lock
 * cannot exist; a lock that can be taken means its owner (and its sentinel, which inherits the
 * descriptor) is gone.
 */
import { ftruncateSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { tryLock, type HeldLock } from '@agent-sandbox/shared/flock';
import type { SessionRecord } from './session-record.js';
import { runtimeDir } from './layout.js';

/** The sessions directory: a real directory owned by us, never a link a session could plant. */
export function ensureSessionsDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ToolError(
      'unsafePath',
      'root-not-writable',
      `cannot make ${dir} for the session's lock (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the root must be writable by the user who runs sessions`,
    );
  }
  const info = lstatSync(dir);
  if (info.isSymbolicLink() || !info.isDirectory())
    throw new ToolError('unsafePath', 'sessions-dir-unsafe', `${dir} is a symlink or not a directory`);
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
  return new ToolError(
    'busy',
    'workspace-busy',
    `workspace ${sessionId} is busy: ${who}; wait for it to end, or stop it with \`podman stop ${record?.containerName ?? `agent-sandbox-${sessionId}`}\``,
    {
      sessionId,
      ...(record
        ? {
            running: {
              runId: record.runId,
              startedAt: record.startedAt,
              user: record.user,
              pid: record.pid,
              containerName: record.containerName,
            },
          }
        : {}),
    },
  );
}

/** Takes the workspace's lock or refuses (92) naming the session that holds it. */
export function lockWorkspace(lockFile: string, recordFile: string, sessionId: string, purpose = 'starting a session'): HeldLock {
  ensureSessionsDir(path.dirname(lockFile));
  const lock = tryLock(lockFile);
  if (!lock) throw busyError(sessionId, readRecord(recordFile), readHolder(lockFile));
  noteHolder(lock, { pid: process.pid, user: os.userInfo().username, host: os.hostname(), since: new Date().toISOString(), purpose });
  return lock;
}

/**
 * The host-wide lock of a session id (issue 32, finding 9): the container's name, the parent
 * cgroup, the broker's and the published ports' socket directories are named by the id alone,
 * so two roots with a workspace of the same id must not run sessions at once. Held beside the
 * workspace's lock for the whole session (and by its sentinel), in this user's runtime directory.
 */
export function idLockFile(sessionId: string): string {
  return path.join(runtimeDir(), 'agent-sandbox', 'ids', `${sessionId}.lock`);
}

/** Takes the id's lock or refuses (92, id-busy) naming the root whose session holds it. */
export function lockSessionId(sessionId: string, root: string): HeldLock {
  const file = idLockFile(sessionId);
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ToolError(
      'startFailed',
      'lock-failed',
      `cannot make ${path.dirname(file)} for the session id's lock (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  const lock = tryLock(file);
  if (!lock) {
    const holder = readHolder(file);
    const who = holder
      ? `a session from ${holder.purpose} (launcher pid ${holder.pid}, since ${holder.since})`
      : 'a session of another root (just starting)';
    throw new ToolError(
      'busy',
      'id-busy',
      `workspace id ${sessionId} is in use on this host by ${who}: container, cgroup and socket names are the id's, so it cannot run from ${root} at the same time; wait for it to end, or use another id`,
      { sessionId },
    );
  }
  noteHolder(lock, {
    pid: process.pid,
    user: os.userInfo().username,
    host: os.hostname(),
    since: new Date().toISOString(),
    purpose: `root ${root}`,
  });
  return lock;
}

/** The id's lock if it is free (a sweep's: the sentinel passes the one it inherited); undefined while a session of the id runs. */
export function tryLockSessionId(sessionId: string): HeldLock | undefined {
  try {
    mkdirSync(path.dirname(idLockFile(sessionId)), { recursive: true, mode: 0o700 });
    return tryLock(idLockFile(sessionId));
  } catch {
    return undefined;
  }
}

/**
 * The container entrypoint's own lines (image/entrypoint.sh: cred-stage install's output), which
 * it writes to <home>/.agent-sandbox-entrypoint.log instead of the user's terminal unless the
 * session runs with --verbose. Read after the session into the ledger line and removed. The
 * file was in the agent's reach: it is read without following a link, only when it is a
 * regular file, and at most 16 KiB of it.
 */
import { closeSync, constants, fstatSync, openSync, readSync, rmSync } from 'node:fs';
import path from 'node:path';
import { entrypointLogName } from '@agent-sandbox/shared/container-layout';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';

const maxBytes = 16 << 10;

export function entrypointLogPath(home: string): string {
  return path.join(home, entrypointLogName);
}

/** The lines, or undefined when there is no such file (an image older than the quiet entrypoint, or --verbose); the file is removed. */
export function takeEntrypointLog(home: string): LedgerLine['entrypoint'] {
  const file = entrypointLogPath(home);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    rmSync(file, { force: true });
    return undefined;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return undefined;
    const buffer = Buffer.alloc(Math.min(info.size, maxBytes));
    const got = readSync(fd, buffer, 0, buffer.length, 0);
    const lines = buffer.subarray(0, got).toString('utf8').split('\n').filter((l) => l !== '');
    return { lines, truncated: info.size > maxBytes };
  } finally {
    closeSync(fd);
    rmSync(file, { force: true, recursive: true });
  }
}

/**
 * exec mode's log: <logDir>/<sessionId>-<time>.log, made exclusively (never a planted link);
 * its path is the only thing exec prints on stdout.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';

export function openExecLog(logDir: string, sessionId: string): string {
  mkdirSync(logDir, { recursive: true, mode: 0o700 });
  const file = path.join(logDir, `${sessionId}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
  closeSync(openSync(file, 'wx', 0o600));
  return file;
}

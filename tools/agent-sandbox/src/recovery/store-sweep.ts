/**
 * What earlier sessions left in the root's git directories, handled at every launcher start
 * (sweep.ts) and by `agent-sandbox workspace import`:
 *
 * - a git store kept after a failed import (mount-plan's kept-store.ts): its import is retried
 *   under the workspace's lock (a session starting there meanwhile is told why it is busy), at
 *   most maxImportRetries times by launcher starts; then it waits for the user, and every start
 *   says so in one line. The next session in that workspace retries it too (git/audit.ts).
 * - `<root>/git-views/<id>`, the git view of an older launcher that died: removed, once no
 *   session holds that workspace's lock, beneath the root without following any link.
 */
import { readdirSync, realpathSync, rmdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { finishGitStore, maxImportRetries, readKept, retriedByNextStart } from '@agent-sandbox/mount-plan';
import { removeBeneath, walkBeneath } from '@agent-sandbox/shared/beneath';
import type { GitReturn } from '@agent-sandbox/shared/schemas/mount-plan';
import { forTerminal, refForTerminal } from '@agent-sandbox/shared/terminal-text';
import { describeGitReturn, gitReturnOf, keptRemedy } from '../git/audit.js';
import { layoutFor, sessionsDir } from '../workspace/layout.js';
import { isLockHeld, tryLock } from '@agent-sandbox/shared/flock';
import { ensureSessionsDir, noteHolder } from '../workspace/lock.js';

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The entries of `<root>/<name>` when it is a real directory reached without a link (else none). */
function entriesOf(root: string, name: string): string[] {
  try {
    if (!walkBeneath(root, path.join(root, name)).stats?.isDirectory()) return [];
    return readdirSync(path.join(root, name));
  } catch {
    return [];
  }
}

/** One import of the kept store of workspace `id`; the caller holds the workspace's lock. */
export function finishKeptStore(root: string, id: string, by: string, log: (line: string) => void): GitReturn | undefined {
  const report = gitReturnOf(finishGitStore(path.join(root, 'git-stores', id), { by }));
  if (report && !report.storeKept)
    log(
      `agent-sandbox: the kept git store of workspace ${forTerminal(id)} was imported: ${report.branch ? refForTerminal(report.branch) : 'no branch'} ${report.outcome}${report.to ? ` at ${report.to.slice(0, 12)}` : ''}`,
    );
  if (report) for (const line of describeGitReturn(report)) log(line);
  return report;
}

/** finishKeptStore under the workspace's lock; 'busy' when a session holds it (that session retries the store itself before it starts). */
function importKeptStore(root: string, id: string, by: string, log: (line: string) => void): GitReturn | 'busy' | undefined {
  ensureSessionsDir(sessionsDir(root));
  const lock = tryLock(layoutFor(root, id).lockFile);
  if (!lock) return 'busy';
  noteHolder(lock, {
    pid: process.pid,
    user: os.userInfo().username,
    host: os.hostname(),
    since: new Date().toISOString(),
    purpose: 'importing a kept git store',
  });
  try {
    return finishKeptStore(root, id, by, log);
  } finally {
    lock.release();
  }
}

/** Every kept store the next start still retries, retried once; the others named in one line each. */
export function retryKeptStores(root: string, log: (line: string) => void): void {
  for (const id of entriesOf(root, 'git-stores').filter((n) => idPattern.test(n))) {
    const dir = path.join(root, 'git-stores', id);
    const state = readKept(dir);
    if (!state) continue;
    if (!retriedByNextStart(state)) {
      log(
        `agent-sandbox: the git store of workspace ${forTerminal(id)} holds commits that did not come home (${state.attempts} imports failed, the last: ${forTerminal(state.why)}); ${keptRemedy({ path: dir, why: state.why, attempts: state.attempts, retried: false })}`,
      );
      continue;
    }
    try {
      importKeptStore(root, id, `the next launcher start (retry ${state.attempts} of ${maxImportRetries})`, log);
    } catch (err) {
      log(`agent-sandbox: could not retry the import of ${forTerminal(dir)}: ${forTerminal((err as Error).message)}`);
    }
  }
}

/** The git views older launchers left (`<root>/git-views/<id>`), removed without following a link. */
export function removeOldViews(root: string, log: (line: string) => void): void {
  const views = path.join(root, 'git-views');
  for (const name of entriesOf(root, 'git-views')) {
    if (isLockHeld(layoutFor(root, name).lockFile)) continue; // that session may still run under an older launcher
    try {
      if (removeBeneath(views, path.join(views, name)).removed)
        log(`agent-sandbox: removed ${forTerminal(path.join(views, name))}, the git view an older launcher left`);
    } catch (err) {
      log(`agent-sandbox: could not remove ${forTerminal(path.join(views, name))}: ${forTerminal((err as Error).message)}`);
    }
  }
  try {
    if (walkBeneath(root, views).stats?.isDirectory()) rmdirSync(views);
  } catch {
    // not empty (a view still in use), or gone: a later start tries again
  }
}

/** Both, for a root given as the user wrote it (a link to the root is the user's own). */
export function sweepGitLeftovers(root: string, log: (line: string) => void): void {
  let real: string;
  try {
    real = realpathSync(root);
  } catch {
    return;
  }
  retryKeptStores(real, log);
  removeOldViews(real, log);
}

/**
 * The running sessions of a root, as their launchers already keep them: a record
 * <root>/sessions/<id>.json (written once the workspace's lock is held, removed before it is
 * released) whose lock the kernel lists as held (/proc/locks: nothing is probed or taken, so a
 * session starting at that moment is never refused because of a look) and whose launcher is
 * alive. `ps`, `stop` and `shell` read only these. A record whose launcher died is its
 * sentinel's or the next sweep's to end, not a running session.
 */
import { readdirSync } from 'node:fs';
import { ToolError } from '@agent-sandbox/shared';
import { isLockHeld } from '@agent-sandbox/shared/flock';
import { processAlive } from '@agent-sandbox/shared/process-alive';
import { checkWorkspaceId, layoutFor, sessionsDir, workspaceIdOf, type SessionLayout } from './layout.js';
import { readRecord } from './lock.js';
import type { SessionRecord } from './session-record.js';

export interface RunningSession {
  layout: SessionLayout;
  record: SessionRecord;
}

/** The session of workspace `id` when it runs now, else undefined. */
export function runningOf(root: string, id: string): RunningSession | undefined {
  const layout = layoutFor(root, id);
  if (!isLockHeld(layout.lockFile)) return undefined;
  const record = readRecord(layout.recordFile);
  if (!record || record.sessionId !== id || !processAlive(record.pid)) return undefined;
  return { layout, record };
}

/** Every running session of the root, by workspace id. */
export function runningSessions(root: string): RunningSession[] {
  let names: string[];
  try {
    names = readdirSync(sessionsDir(root));
  } catch {
    return [];
  }
  const ids = names.filter((n) => n.endsWith('.json') && !n.startsWith('.')).map((n) => n.slice(0, -'.json'.length));
  return ids.sort().flatMap((id) => {
    try {
      const running = runningOf(root, checkWorkspaceId(id));
      return running ? [running] : [];
    } catch {
      return [];
    }
  });
}

/** The running session of a workspace (an id or its path), or the refusal (93, no-running-session) `stop` and `shell` give. */
export function requireRunning(root: string, workspace: string, command: string): RunningSession {
  const id = checkWorkspaceId(workspaceIdOf(workspace));
  const running = runningOf(root, id);
  if (!running) {
    throw new ToolError(
      'notRunning',
      'no-running-session',
      `${command}: no session of workspace ${id} runs in ${root} (\`agent-sandbox ps --root ${root}\` lists those that do)`,
      { sessionId: id },
    );
  }
  return running;
}

/**
 * What the launcher of a running session takes from outside while it runs (issue 36): a stop
 * request (`agent-sandbox stop`) and the notes of the shells run in it (`agent-sandbox shell`),
 * both in files of the root's sessions directory, beside the session's lock and record, which no
 * session mounts:
 *
 *   <root>/sessions/<id>.stop     {grace, by, at, pid}: written by `stop`, which then sends the
 *                                 launcher SIGUSR2 (the record's `stopSignal` says it takes it)
 *   <root>/sessions/<id>.shells   one JSON line per shell: {at, by, uid, command, tty}
 *
 * A signal, not a watch: a quiet session pays nothing, and the launcher learns at once. The
 * handler is installed before the record is written and removed after it is gone, so a launcher
 * that has a record never dies of SIGUSR2's default action. The launcher ends the session as for
 * any stop (the container stopped with the request's grace: the agent's SIGTERM, then the kill),
 * and its ledger line says who stopped it and lists the shells (bounded).
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { readPlainBounded } from '@agent-sandbox/mount-plan';
import type { SessionEnd } from '../ledger/verdict.js';
import { sessionsDir, type SessionLayout } from '../workspace/layout.js';
import type { LaunchIo } from './launch-io.js';

export const stopSignal = 'SIGUSR2';
/** The abort reason, the ledger's `reason` and the last line's word for a session ended by `stop`. */
export const stoppedReason = 'stopped';

export interface StopRequest {
  grace: number;
  by: string;
  at: string;
  pid: number;
}

export interface ShellNote {
  at: string;
  by: string;
  uid: number;
  command: string[];
  tty: boolean;
}

export const stopFileOf = (layout: Pick<SessionLayout, 'root' | 'sessionId'>) =>
  path.join(sessionsDir(layout.root), `${layout.sessionId}.stop`);
export const shellsFileOf = (layout: Pick<SessionLayout, 'root' | 'sessionId'>) =>
  path.join(sessionsDir(layout.root), `${layout.sessionId}.shells`);

/** Written whole (a temp file renamed over it): the launcher never reads half a request. */
export function writeStopRequest(layout: Pick<SessionLayout, 'root' | 'sessionId'>, request: StopRequest): void {
  const file = stopFileOf(layout);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(request)}\n`, { mode: 0o600 });
  renameSync(temp, file);
}

function readStopRequest(layout: SessionLayout): StopRequest | undefined {
  try {
    const parsed = JSON.parse(readPlainBounded(stopFileOf(layout), 4096)?.toString('utf8') ?? '') as Partial<StopRequest>;
    const grace = Number(parsed.grace);
    if (!Number.isInteger(grace) || grace < 0) return undefined;
    return { grace, by: String(parsed.by ?? 'unknown').slice(0, 200), at: String(parsed.at ?? ''), pid: Number(parsed.pid) || 0 };
  } catch {
    return undefined;
  }
}

/** The notes file stops growing here (shell-session.ts), and the launcher reads no more of it. */
export const shellNotesMaxBytes = 1 << 20;

/** Shells named in the ledger line; past these only counted. */
export const namedShells = 20;

/** The shells the notes file lists, for the ledger line. */
export function shellsOf(text: string): NonNullable<LedgerLine['shells']> {
  const notes: ShellNote[] = [];
  for (const raw of text.split('\n')) {
    try {
      const n = JSON.parse(raw) as ShellNote;
      if (typeof n.at === 'string' && Array.isArray(n.command)) notes.push(n);
    } catch {
      // a half-written or foreign line
    }
  }
  const kept = notes.slice(0, namedShells);
  const named = kept.map((n) => ({
    at: n.at,
    by: String(n.by).slice(0, 200),
    uid: Number(n.uid),
    command: n.command.map((a) => String(a).slice(0, 200)).slice(0, 20),
    tty: Boolean(n.tty),
  }));
  return { named, others: notes.length - named.length };
}

export interface Live {
  /** The launch's I/O with the stop request joined to its own stop signal, and the request's grace. */
  io: LaunchIo;
  /** The session's end with who stopped it and the shells run in it. */
  finish(end: SessionEnd): SessionEnd;
  /** Once the workspace is held: removes what an earlier session of this id left (its launcher died). */
  held(): void;
  /** Removes the handler and the session's files (after the record is gone). Idempotent. */
  close(): void;
}

const removeFiles = (layout: SessionLayout) => {
  for (const file of [stopFileOf(layout), shellsFileOf(layout)]) rmSync(file, { force: true });
};

/** Takes stop requests from here on (before the record is written, so SIGUSR2 never finds a launcher without its handler). */
export function openLive(layout: SessionLayout, io: LaunchIo): Live {
  const stop = new AbortController();
  let request: StopRequest | undefined;
  const onSignal = () => {
    request ??= readStopRequest(layout);
    if (request && !stop.signal.aborted) stop.abort(stoppedReason);
  };
  process.on(stopSignal, onSignal);
  let closed = false;
  return {
    io: {
      ...io,
      stop: io.stop ? AbortSignal.any([io.stop, stop.signal]) : stop.signal,
      stopGrace: (why) => (why === stoppedReason && request ? request.grace : undefined),
    },
    held: () => removeFiles(layout),
    finish(end) {
      const shellsText = readPlainBounded(shellsFileOf(layout), shellNotesMaxBytes)?.toString('utf8');
      const shells = shellsText ? shellsOf(shellsText) : undefined;
      const stopped = end.reason === stoppedReason && request;
      return {
        ...end,
        ...(stopped
          ? {
              message: `stopped by ${request!.by} with agent-sandbox stop (grace ${request!.grace}s)`,
              evidence: { ...end.evidence, stopRequest: request },
            }
          : {}),
        ...(shells && (shells.named.length > 0 || shells.others > 0) ? { shells } : {}),
      };
    },
    close() {
      if (closed) return;
      closed = true;
      process.off(stopSignal, onSignal);
      removeFiles(layout);
    },
  };
}

/**
 * What a launch may do besides returning its exit status: passed in by the commands (run,
 * exec, receive) so the pipeline itself never touches process stdio.
 */
import type { LedgerLine } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { WorkTransfer } from '@agent-sandbox/shared/schemas/workspace';
import type { HeldLock } from '@agent-sandbox/shared/flock';
import type { FaultHooks } from './faults.js';
import type { Progress } from './progress.js';

export interface LaunchIo {
  env: NodeJS.ProcessEnv;
  user: string;
  /** Set by the receiver: this node's name (the client already picked the host; no pick here). */
  host?: string;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  log: (line: string) => void;
  progress: Progress;
  /** exec mode: the bare log path goes here (the only thing on stdout). */
  printStdout: (text: string) => void;
  /** Aborted when the session must stop from outside (the receiver's lost connection). */
  stop?: AbortSignal;
  /** The grace (seconds) a stop of this reason gets, when not the launcher's own (`agent-sandbox stop --grace`). */
  stopGrace?: (why: string) => number | undefined;
  faults?: FaultHooks;
  /** Extra fields for the ledger line (the receiver's `remote`). */
  remote?: Record<string, unknown>;
  /** The workspace's lock, already held by the caller (the receiver carrying work); the launch neither takes nor releases it. */
  lock?: HeldLock;
  /** The work the session carried, for its ledger line (the receiver's side). */
  work?: WorkTransfer;
  /** Called with the session's one ledger line once it is written (the receiver sends it back). */
  onVerdict?: (line: LedgerLine) => void;
}

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
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  log: (line: string) => void;
  progress: Progress;
  /** exec mode: the bare log path goes here (the only thing on stdout). */
  printStdout: (text: string) => void;
  /** Aborted when the session must stop from outside (`agent-sandbox stop`, a node's lost connection). */
  stop?: AbortSignal;
  /** The grace (seconds) a stop of this reason gets, when not the launcher's own (`agent-sandbox stop --grace`). */
  stopGrace?: (why: string) => number | undefined;
  faults?: FaultHooks;
  /** Set only on a dispatch node, by its driver (receive.ts): what a dispatched session adds. */
  node?: NodeLaunch;
}

/** A launch on a node for a client's request: what the node's driver (receive.ts) gives it beside the I/O. */
export interface NodeLaunch {
  /** This node's name: the client picked the host, so no pick happens here. */
  host: string;
  /** What the session's ledger line says of where it came from (`remote`) and the work it carried (`work`). */
  line: { remote: Record<string, unknown>; work?: WorkTransfer };
  /** The workspace's lock, taken by the driver while it received the work; the launch neither takes nor releases it. */
  lock?: HeldLock;
  /** Called with the session's one ledger line once it is written: the driver sends it back to the client. */
  onVerdict: (line: LedgerLine) => void;
}

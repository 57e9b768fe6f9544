/**
 * What the commands get from the process (the entry, commands/index.ts `run`) and what a
 * launch may do through them: stdout for exec's log path and the receiver's bundle, the
 * receiver's channel on stdin, and progress lines on stderr, in words, with --verbose.
 */
import os from 'node:os';
import type { RunContext } from '@agent-sandbox/shared';
import type { LaunchIo } from '../session/launch-io.js';
import { makeProgress } from '../session/progress.js';
import type { Channel } from '../dispatch/receive-request.js';

export interface Entry {
  argv: string[];
  writeStdout: (text: string) => void;
  /** The receiver's channel: the request's first line on stdin, the bytes after it, and the connection's end. */
  channel: () => Channel;
  /** The process's stdout as a stream (the receiver's return bundle). */
  stdout: () => NodeJS.WritableStream;
  stderrIsTTY: boolean;
}

export const user = () => os.userInfo().username;

/** The launch's I/O for a command: the context's stderr, progress only with --verbose. */
export function launchIo(entry: Entry, ctx: RunContext, verbose: boolean): LaunchIo {
  return {
    env: ctx.env,
    user: user(),
    stdinIsTTY: ctx.stdinIsTTY,
    stdoutIsTTY: ctx.stdoutIsTTY,
    log: ctx.log,
    progress: makeProgress(verbose, ctx.log),
    printStdout: entry.writeStdout,
  };
}

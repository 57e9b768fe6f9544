/**
 * `agent-sandbox stop`'s core: the session's own launcher ends it, as after any stop. The request
 * ({grace, by}) is written beside the session's record, the launcher is sent SIGUSR2
 * (session/live.ts), and this waits until the launcher has let go of the workspace, then reads the
 * session's ledger line: its reason is `stopped`. The container is stopped with the grace (the
 * agent's SIGTERM through tini, then the kill), the branch comes home, the broker and the cgroup
 * go: all as the launcher does after any end. A session whose launcher predates the request (no
 * `stopSignal` in its record) is stopped through podman with the same grace.
 */
import os from 'node:os';
import { ToolError } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import type { StopOutput } from '@agent-sandbox/shared/schemas/agent-sandbox-reports';
import { parseLines, tailOf } from '../ledger/read.js';
import { requireRunning, runningOf } from '../workspace/running.js';
import { stopSignal, writeStopRequest } from './live.js';

/** How long past the grace the launcher may take to bring the branch home and write its line. */
export const endingMarginSeconds = 120;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function verdictOf(ledgerFile: string, runId: string): StopOutput['verdict'] {
  const line = parseLines(tailOf(ledgerFile, 1 << 20).text)
    .map(({ line }) => line)
    .reverse()
    .find((l) => l.runId === runId);
  return line ? { exitCode: line.exitCode, reason: line.reason, endedAt: line.endedAt } : null;
}

export async function stopSession(options: {
  root: string;
  workspace: string;
  grace: number;
  log: (line: string) => void;
}): Promise<StopOutput> {
  const { layout, record } = requireRunning(options.root, options.workspace, 'stop');
  const by = os.userInfo().username;
  if (record.stopSignal === stopSignal) {
    writeStopRequest(layout, { grace: options.grace, by, at: new Date().toISOString(), pid: process.pid });
    process.kill(record.pid, stopSignal);
  } else {
    await runPodman(['stop', '--ignore', '--time', String(options.grace), record.containerName], {
      expect: 'any',
      timeoutMs: (options.grace + 60) * 1000,
    });
  }
  options.log(
    `agent-sandbox: stopping session ${layout.sessionId} (launcher pid ${record.pid}): ${options.grace > 0 ? `SIGTERM to the agent, the kill after ${options.grace}s` : 'the kill at once'}`,
  );
  const deadline = Date.now() + (options.grace + endingMarginSeconds) * 1000;
  while (runningOf(options.root, layout.sessionId)?.record.runId === record.runId) {
    if (Date.now() > deadline) {
      throw new ToolError(
        'internal',
        'stop-unanswered',
        `stop: session ${layout.sessionId}'s launcher (pid ${record.pid}) did not end it within ${options.grace + endingMarginSeconds}s`,
      );
    }
    await sleep(100);
  }
  return {
    ok: true,
    workspace: layout.sessionId,
    runId: record.runId,
    grace: options.grace,
    by,
    verdict: verdictOf(record.ledgerFile, record.runId),
  };
}

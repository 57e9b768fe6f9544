/**
 * A session driver the launcher reuses: prepare the parent cgroup, run the
 * container with `podman run --rm --name --cidfile --cgroup-parent`, attribute
 * its end from the sources that outlive it, write the result file, clean up.
 * On SIGINT/SIGTERM it stops the container first, then attributes and cleans
 * up; an 'exit' handler removes the container and the cgroup even after a
 * crash. The common path starts exactly one podman process.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { childProcess } from '@agent-sandbox/shared/builtins';
import { constants } from 'node:os';
import { podmanGlobalArgs } from '@agent-sandbox/shared';
import { podmanBinary, podmanEnv, podmanScratchDir, runPodman } from '@agent-sandbox/shared/podman';
import type { PodmanAttribOutput } from '@agent-sandbox/shared/schemas/podman-attrib';
import { attributeEnd } from './attribute-end.js';
import { readContainerEvents } from './event-log.js';
import { prepareAttribution, type Attribution } from './prepare.js';
import { startSampler } from './sampler.js';

export interface RunResult {
  exitCode: number;
  startedAt: string;
  endedAt: string;
  stderrTail?: string;
}

export interface SessionOptions {
  sessionId: string;
  /** Default agent-sandbox-<sessionId>. */
  containerName?: string;
  /** `podman run` arguments after the ones we add (flags, image, command); no --rm/--name/--cidfile/--cgroup-parent. */
  runArgs: string[];
  /** Where the attribution document goes (written atomically); never stdout. */
  resultFile?: string;
  /** Called with the attribution before cleanup (the launcher's ledger writer). */
  onAttributed?: (attribution: PodmanAttribOutput) => void | Promise<void>;
  /** Seconds `podman stop` waits before SIGKILL when the launcher is interrupted (default 5). */
  stopSeconds?: number;
  /** stdin/stdout of the container; stderr is always teed to ours and its tail kept. */
  stdio?: 'inherit' | 'ignore';
  cidfileDir?: string;
}

export interface SessionResult {
  attribution: PodmanAttribOutput;
  interrupted?: 'SIGINT' | 'SIGTERM';
  /** Cgroup directories that could not be removed (empty on success). */
  leftover: string[];
}

const tailBytes = 4096;

/** Writes the document next to its final name and renames it over, so readers never see half. */
export function writeResultFile(file: string, document: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(document)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** True when the event log shows podman removed the container (no extra podman process needed). */
function removedPerEventLog(prepared: Attribution, name: string): boolean {
  const read = readContainerEvents({ name }, prepared.eventLog.offset, prepared.eventLog.path);
  return read.state === 'read' && read.events.some((e) => e.status === 'remove');
}

/** Synchronous force-removal, usable from an 'exit' handler. */
function removeContainerSync(name: string, cwd: string): void {
  try {
    childProcess().execFileSync(podmanBinary, [...podmanGlobalArgs(), 'rm', '--force', '--ignore', '--time', '0', name], {
      stdio: 'ignore',
      timeout: 30_000,
      cwd,
      env: podmanEnv(process.env),
    });
  } catch {
    // nothing more can be done from an exiting process
  }
}

export async function runAttributedSession(options: SessionOptions): Promise<SessionResult> {
  const name = options.containerName ?? `agent-sandbox-${options.sessionId}`;
  const prepared = prepareAttribution({ sessionId: options.sessionId, ...(options.cidfileDir ? { runDir: options.cidfileDir } : {}) });
  const scratch = podmanScratchDir();
  let settled = false;
  const safetyNet = () => {
    if (settled) return;
    removeContainerSync(name, scratch.dir);
    prepared.cleanup();
    scratch.remove();
  };
  process.on('exit', safetyNet);

  let interrupted: 'SIGINT' | 'SIGTERM' | undefined;
  let stopping: Promise<unknown> | undefined;
  const sampler = startSampler({ layout: prepared.layout });
  const argv = [
    ...podmanGlobalArgs(),
    'run', '--rm', '--name', name, '--cidfile', prepared.cidfile, `--cgroup-parent=${prepared.cgroupParent}`,
    ...options.runArgs,
  ];
  const startedAt = new Date().toISOString();
  // Loaded on first use: execa is a large module that a session's common path never needs.
  const { execa } = await import('execa');
  const child = execa(podmanBinary, argv, {
    reject: false,
    cwd: scratch.dir,
    env: podmanEnv(process.env),
    extendEnv: false,
    stdin: options.stdio ?? 'inherit',
    stdout: options.stdio ?? 'inherit',
    stderr: 'pipe',
    buffer: { stderr: false },
  });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-tailBytes);
  });

  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    interrupted ??= signal;
    stopping ??= (async () => {
      // The container may not exist yet: keep asking until podman run has returned.
      const deadline = Date.now() + ((options.stopSeconds ?? 5) + 10) * 1000;
      while (child.exitCode === null && child.signalCode === null) {
        await runPodman(['stop', '--ignore', '--time', String(options.stopSeconds ?? 5), name], { expect: 'any', timeoutMs: 60_000 });
        if (Date.now() > deadline) child.kill('SIGKILL');
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);

  let result: RunResult;
  try {
    const done = await child;
    scratch.remove();
    let exitCode: number;
    if (typeof done.exitCode === 'number') exitCode = done.exitCode;
    else if (done.signal) exitCode = 128 + (constants.signals[done.signal] ?? 9);
    else {
      // podman itself could not be run (ENOENT, EACCES): podman's own "could not start" status.
      exitCode = 125;
      tail += `\nError: cannot run ${podmanBinary}: ${done.shortMessage ?? done.message}`;
    }
    result = { exitCode, startedAt, endedAt: new Date().toISOString(), stderrTail: tail.split('\n').slice(-20).join('\n') };
    await stopping;
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
  const sampled = await sampler.stop();

  // podman run --rm removed the container unless it was interrupted or killed: make sure, cheaply.
  if (interrupted || !removedPerEventLog(prepared, name)) {
    await runPodman(['rm', '--force', '--ignore', '--time', '0', name], { expect: 'any', timeoutMs: 60_000 });
  }
  const attribution = attributeEnd({
    sessionId: options.sessionId,
    containerName: name,
    exitCode: result.exitCode,
    startedAt: result.startedAt,
    endedAt: result.endedAt,
    ...(result.stderrTail ? { stderrTail: result.stderrTail } : {}),
    sampled,
    prepared,
    ...(interrupted ? { interrupted } : {}),
  });
  let leftover: string[] = [];
  try {
    if (options.resultFile) writeResultFile(options.resultFile, attribution);
    await options.onAttributed?.(attribution);
  } finally {
    leftover = prepared.cleanup();
    settled = leftover.length === 0;
    if (settled) process.off('exit', safetyNet);
  }
  return { attribution, ...(interrupted ? { interrupted } : {}), leftover };
}

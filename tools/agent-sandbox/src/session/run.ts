/**
 * Runs a composed, acquired session: one `podman run --rm` under the session's parent cgroup
 * (sandbox-run), a sampler for peaks, the watchdogs that stop it (wall-clock timeout, disk
 * ceiling, and whatever the caller links in: a lost ssh connection), then attribution from
 * what outlives the container (podman-attrib: exit status, parent cgroup, kernel and event
 * logs). The reason is the launcher's own when it stopped the container, else podman-attrib's.
 */
import { readFileSync } from 'node:fs';
import { filesForDisk, parseDuration, parseSize } from '@agent-sandbox/shared/limits';
import { podmanEnv } from '@agent-sandbox/shared/podman';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import type { PodmanAttribOutput } from '@agent-sandbox/shared/schemas/podman-attrib';
import { attributeEnd, killContainerNow, startSampler } from '@agent-sandbox/podman-attrib';
import { runPlan, type RunFacts, type RunHooks } from '@agent-sandbox/sandbox-run';
import type { Acquired } from './acquire.js';
import { containerEnvOf, type SessionPlan } from './compose.js';
import { freeInodes } from '../disk/usage.js';
import { filesCeiling, watchDisk, type DiskUsage } from '../disk/watch.js';
import { reach, type FaultHooks } from './faults.js';
import { settleAfterStart } from './settle.js';

export interface RunIo {
  stdio: NonNullable<RunHooks['stdio']>;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  /** Aborted from outside to stop the session (the receiver's lost connection); its reason is the verdict's. */
  stop?: AbortSignal;
  /** The grace a stop of this reason gets, when the stop's asker chose it (`agent-sandbox stop --grace`). */
  stopGrace?: (why: string) => number | undefined;
  /** podman's pid, once spawned (the launcher records it for the sentinel). */
  onSpawn?: (pid: number | undefined) => void;
  faults?: FaultHooks;
  /** Files outside the workspace and home that the session fills through the launcher (exec's log): counted in --disk too. */
  alsoCounted?: string[];
  /** After each walk of the disk watch (at least every 15 s): what it counted. */
  onDiskWalk?: (usage: DiskUsage) => void;
  /**
   * Once, when the start is over: 5 s after the later of the container's start and the end of the
   * disk watch's first count (settle.ts). The launcher collects the start's garbage there.
   */
  onSettled?: () => void;
}

export interface SessionRun {
  exitCode: number;
  startedAt: string;
  endedAt: string;
  reason: string;
  attribution: PodmanAttribOutput;
  disk: DiskUsage;
  /** Why the launcher stopped it (timeout, disk-limit, SIGTERM, ...), when it did. */
  stopped?: string;
}

/**
 * The container's id, read from the cidfile while the container exists (podman --rm removes the
 * file): every 50 ms until podman wrote it (within its create, well under a second), then never.
 */
function watchCidfile(file: string): { id(): string | undefined; stop(): void } {
  let id: string | undefined;
  const read = () => {
    if (id) return;
    try {
      const text = readFileSync(file, 'utf8').trim();
      if (/^[0-9a-f]{64}$/.test(text)) {
        id = text;
        clearInterval(timer);
      }
    } catch {
      // not written yet
    }
  };
  const timer = setInterval(read, 50);
  timer.unref();
  return {
    id: () => (read(), id),
    stop: () => clearInterval(timer),
  };
}

/**
 * The stop's grace: 3 s for every reason but the disk ceiling. A session over --disk is killed
 * at once: it is writing the host's disk as fast as it can (1-2 GB/s into the page cache here),
 * and a writer that ignores SIGTERM (sh as PID 1 does) would fill the grace with more.
 */
const graceFor = (why: string) => (why === 'disk-limit' ? 0 : 3);

/** Which of --disk's two ceilings the session passed, in words. */
function describeDiskExceeded(u: DiskUsage): string {
  return u.exceeded === 'files'
    ? `the session made ${u.writtenFiles} files and directories, over its ceiling of ${u.limitFiles} (one per 16 KiB of --disk)`
    : `the session wrote ${u.writtenBytes} bytes, over its ceiling of ${u.limitBytes} (--disk)`;
}

/**
 * The stop sources: the wall-clock ceiling, the disk ceiling, and the caller's signal. Over the
 * disk ceiling `killNow` runs first (the container's processes killed through its cgroup), then
 * the stop as for every reason. The disk watch's first count is also one of the two marks of the
 * start's end (`io.onSettled`).
 */
function stopSources(plan: SessionPlan, io: RunIo, killNow: () => void) {
  const stop = new AbortController();
  const abort = (reason: string) => {
    if (!stop.signal.aborted) {
      io.log(`agent-sandbox: stopping session ${plan.identity.sessionId}: ${forTerminal(reason)}`);
      stop.abort(reason);
    }
  };
  const timeoutMs = parseDuration('--timeout', plan.identity.limits.timeout) * 1000;
  const timer = setTimeout(() => abort('timeout'), timeoutMs);
  timer.unref();
  const onOuter = () => abort(String(io.stop?.reason ?? 'stopped'));
  if (io.stop?.aborted) onOuter();
  else io.stop?.addEventListener('abort', onOuter, { once: true });
  const limitBytes = parseSize('--disk', plan.identity.limits.disk);
  const settle = settleAfterStart(io.onSettled);
  const disk = watchDisk({
    // The session's git store is its to write too (objects, refs): the same ceiling.
    // So are the upper layers over its caches (--cache): what it writes there is on this disk until
    // it ends. (Not the overlay's work directory: the kernel makes its work/ mode 000, which a
    // rootless launcher could not walk; it holds nothing once a copy-up is done.)
    dirs: [
      plan.layout.workspace,
      plan.layout.home,
      ...(plan.mounts.gitStore ? [plan.mounts.gitStore.dir] : []),
      ...plan.allMounts.flatMap((m) => (m.overlay ? [m.overlay.upper] : [])),
      ...(io.alsoCounted ?? []),
    ],
    limitBytes,
    limitFiles: filesCeiling(filesForDisk(limitBytes), freeInodes(plan.layout.root)),
    onWalk: (usage) => {
      settle.counted();
      io.onDiskWalk?.(usage);
    },
    onExceeded: (usage) => {
      killNow();
      io.log(`agent-sandbox: ${describeDiskExceeded(usage)}`);
      abort('disk-limit');
    },
  });
  return {
    signal: stop.signal,
    /** The container started: the settle's clock begins. */
    started: settle.started,
    async end(): Promise<DiskUsage> {
      settle.ended();
      clearTimeout(timer);
      io.stop?.removeEventListener('abort', onOuter);
      return await disk.stop();
    },
  };
}

export async function runSession(plan: SessionPlan, acquired: Acquired, facts: RunFacts, io: RunIo): Promise<SessionRun> {
  const { prepared } = acquired;
  const cid = watchCidfile(prepared.cidfile);
  const sources = stopSources(plan, io, () => {
    const id = cid.id();
    if (id !== undefined) killContainerNow(prepared.layout, id);
  });
  const sampler = startSampler({ layout: prepared.layout });
  let outcome;
  let disk: DiskUsage;
  try {
    await reach(io.faults, 'starting');
    outcome = await runPlan(
      { ...plan.runPlan, cgroupParent: prepared.cgroupParent, cidfile: prepared.cidfile },
      {
        facts,
        stdio: io.stdio,
        env: podmanEnv({ ...io.env, ...containerEnvOf(plan) }, plan.runPlan.env ?? []),
        stop: sources.signal,
        stopGraceSeconds: (why) => io.stopGrace?.(why) ?? graceFor(why),
        log: io.log,
        onStart: ({ pid }) => {
          io.onSpawn?.(pid);
          sources.started();
          void reach(io.faults, 'started');
        },
      },
    );
  } finally {
    disk = await sources.end();
    cid.stop();
  }
  const sampled = await sampler.stop();
  await reach(io.faults, 'attributing');
  const containerId = cid.id();
  const attribution = attributeEnd({
    prepared,
    sessionId: plan.identity.sessionId,
    containerName: outcome.containerName,
    exitCode: outcome.exitCode,
    startedAt: outcome.startedAt,
    endedAt: outcome.endedAt,
    ...(containerId ? { containerId } : {}),
    sampled,
    ...(outcome.interrupted ? { interrupted: outcome.interrupted } : {}),
  });
  // A session that passed --disk and exited before a walk caught it (the last walk, after the
  // container, did) ended over its ceiling all the same: that is its reason.
  const overDisk = disk.exceeded && !outcome.stopped ? 'disk-limit' : undefined;
  const stopped = outcome.stopped ?? outcome.interrupted;
  return {
    exitCode: outcome.exitCode,
    startedAt: outcome.startedAt,
    endedAt: outcome.endedAt,
    reason: outcome.stopped ?? overDisk ?? attribution.reason,
    attribution,
    disk,
    ...(stopped ? { stopped } : {}),
  };
}

/**
 * After the container ended (and, with `--rm`, is already gone): the reason and
 * peaks from the sources that outlive it: the exit status podman run returned,
 * the kernel log, the parent cgroup's counters, podman's event log. No podman
 * process is started.
 */
import type { Evidence, PodmanAttribOutput, Peak } from '@agent-sandbox/shared/schemas/podman-attrib';
import { cgroupLayout, type CgroupLayout } from '../cgroup/cgroup-tree.js';
import { peakFromCounters, pidsPeakBasis, readCounters, type Counters } from '../cgroup/counters.js';
import { eventLogPath, readContainerEvents, type EventRead } from '../verdict/event-log.js';
import { findKernelEvents, kmsgPath, readKmsg, type KmsgRead } from '../verdict/kernel-log.js';
import type { Attribution } from './prepare.js';
import { parentFromArg, sessionParent, type SessionParent } from '../cgroup/session-parent.js';
import { decide } from '../verdict/verdict.js';
import { readFileSync } from 'node:fs';

export interface AttributeEndInput {
  sessionId: string;
  containerName: string;
  /** As given to --cgroup-parent (default: this host's form of the session's parent, cgroup/session-parent.ts). */
  cgroupParent?: string;
  /** The parent prepareAttribution made (where the kernel puts it, its slice). */
  parent?: SessionParent;
  exitCode: number;
  startedAt?: string;
  endedAt?: string;
  /** The container ID from the cidfile, when it was written. */
  containerId?: string;
  /** Marks taken by prepareAttribution: only later log lines count. */
  kmsgSeq?: number;
  eventLog?: { path: string; offset: number };
  layout?: CgroupLayout;
  /** Peaks from startSampler, used where no peak file survived. */
  sampled?: Peak;
  interrupted?: 'SIGINT' | 'SIGTERM';
  /** What prepareAttribution returned: supplies the marks, the layout and the cidfile's container ID. */
  prepared?: Attribution;
}

/** Seams for tests: where the kernel log and event log are read from. */
export interface AttributeDeps {
  readKmsg?: (afterSeq: number) => KmsgRead;
  readEvents?: (match: { name?: string; id?: string }, offset: number, file: string) => EventRead;
}

export function kernelEvidence(read: KmsgRead, match: string): Evidence['kernelLog'] {
  if (read.state !== 'read') return { state: read.state, source: kmsgPath, error: read.error, match, oomKills: [], pidsRejections: [] };
  return { state: 'read', source: kmsgPath, match, ...findKernelEvents(read.records, match) };
}

export function eventEvidence(read: EventRead): Evidence['eventLog'] {
  if (read.state !== 'read') return { state: read.state, source: read.source, error: read.error, events: [] };
  return { state: 'read', source: read.source, events: read.events };
}

export function cgroupEvidence(layout: CgroupLayout, parent: string, counters: Counters, sampled?: Peak): Evidence['cgroup'] {
  const found = Object.keys(counters).length > 0;
  return {
    state: found ? 'read' : 'absent',
    version: layout.mode === 'v2' ? 'v2' : 'v1',
    parent,
    ...(found ? {} : { error: `no counters under ${layout.dirs.memory}` }),
    counters,
    ...(sampled ? { sampled } : {}),
    ...(found ? { pidsPeakBasis: pidsPeakBasis(counters) } : {}),
  };
}

/** The container ID podman wrote to the cidfile, if it got that far. */
export function readCidfile(file: string): string | undefined {
  try {
    const id = readFileSync(file, 'utf8').trim();
    return /^[0-9a-f]{64}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The session's kernel log records: from the cursor prepareAttribution opened (only what is
 * new since its first read; when that read lost the race with podman, the records it read
 * count only where they name this container's own cgroup), else the whole ring after the mark.
 */
function kernelRead(given: AttributeEndInput, input: AttributeEndInput, parent: string, deps: AttributeDeps): KmsgRead {
  // parent: the path the kernel names (relPath), e.g. /agent_sandbox.slice/agent_sandbox-x.slice
  const cursor = input.prepared?.kernel;
  if (deps.readKmsg || !cursor || given.kmsgSeq !== undefined) return (deps.readKmsg ?? readKmsg)(input.kmsgSeq ?? -1);
  const own = input.containerId ? `${parent}/libpod-${input.containerId}` : undefined;
  return cursor.finish(own ? (message) => message.includes(own) : undefined);
}

export function attributeEnd(given: AttributeEndInput, deps: AttributeDeps = {}): PodmanAttribOutput {
  const p = given.prepared;
  const cid = p ? readCidfile(p.cidfile) : undefined;
  const input: AttributeEndInput = {
    ...(p ? { cgroupParent: p.cgroupParent, parent: p.parent, kmsgSeq: p.kmsgSeq, eventLog: p.eventLog, layout: p.layout } : {}),
    ...(cid ? { containerId: cid } : {}),
    ...given,
  };
  const where = input.parent ?? (input.cgroupParent === undefined ? sessionParent(input.sessionId) : parentFromArg(input.cgroupParent));
  const parent = input.cgroupParent ?? where.podmanArg;
  const layout = input.layout ?? cgroupLayout(where.relPath);
  // The parent's own counters, and what the watch saw in the container's cgroup while it ran.
  const counters = { ...readCounters(layout), ...(p?.events.stop() ?? {}) };
  const kernel = kernelEvidence(kernelRead(given, input, where.relPath, deps), where.relPath);
  const logFile = input.eventLog?.path ?? eventLogPath();
  const match = { name: input.containerName, ...(input.containerId ? { id: input.containerId } : {}) };
  const eventRead = (deps.readEvents ?? readContainerEvents)(match, input.eventLog?.offset ?? 0, logFile);
  const eventLog = eventEvidence(eventRead);
  const verdict = decide({
    exitCode: input.exitCode,
    kernel: kernel.state === 'read' ? kernel : undefined,
    counters,
    events: eventLog.state === 'read' ? eventLog.events : undefined,
  });
  const evidence: Evidence = {
    basis: verdict.basis,
    exit: { status: input.exitCode, source: 'podman-run', ...(verdict.signal ? { signal: verdict.signal } : {}) },
    kernelLog: kernel,
    cgroup: cgroupEvidence(layout, parent, counters, input.sampled),
    eventLog,
    ...(input.interrupted ? { interrupted: input.interrupted } : {}),
  };
  const id = input.containerId ?? (eventRead.state === 'read' ? eventRead.id : undefined);
  return {
    ok: true,
    exitCode: input.exitCode,
    reason: verdict.reason,
    evidence,
    peak: peakFromCounters(counters, layout.mode, input.sampled),
    sessionId: input.sessionId,
    container: input.containerName,
    ...(id ? { containerId: id } : {}),
    ...(input.startedAt ? { startedAt: input.startedAt } : {}),
    ...(input.endedAt ? { endedAt: input.endedAt } : {}),
  };
}

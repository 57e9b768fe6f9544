/**
 * The CLI path, for shell callers: attribute an exited container that still
 * exists (run without --rm). Costs one `podman inspect`; adds the event log
 * and the kernel log lines naming the container's own cgroup (libpod-<id>),
 * and the counters of its parent when the parent is a session parent of ours.
 */
import { ToolError } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import type { Evidence, Peak, PodmanAttribOutput } from '@agent-sandbox/shared/schemas/podman-attrib';
import { cgroupEvidence, eventEvidence, kernelEvidence, type AttributeDeps } from './attribute-end.js';
import { cgroupLayout, parentBase } from '../cgroup/cgroup-tree.js';
import { parentFromArg } from '../cgroup/session-parent.js';
import { peakFromCounters, readCounters, type Counters } from '../cgroup/counters.js';
import { eventLogPath, readContainerEvents } from '../verdict/event-log.js';
import { kmsgPath, readKmsg } from '../verdict/kernel-log.js';
import { decide, signalOfStatus } from '../verdict/verdict.js';

export interface InspectedState {
  id: string;
  name: string;
  status: string;
  exitCode: number;
  oomKilled: boolean;
  error: string;
  startedAt: string;
  finishedAt: string;
  cgroupParent: string;
}

/** The fields we use from `podman inspect --format json` of one container. */
export function parseInspect(stdout: string): InspectedState {
  const [doc] = JSON.parse(stdout) as any[];
  const state = doc?.State ?? {};
  return {
    id: String(doc?.Id ?? ''),
    name: String(doc?.Name ?? ''),
    status: String(state.Status ?? ''),
    exitCode: Number(state.ExitCode ?? 0),
    oomKilled: Boolean(state.OOMKilled),
    error: String(state.Error ?? ''),
    startedAt: String(state.StartedAt ?? ''),
    finishedAt: String(state.FinishedAt ?? ''),
    cgroupParent: String(doc?.HostConfig?.CgroupParent ?? ''),
  };
}

export interface ContainerDeps extends AttributeDeps {
  inspect?: (container: string) => Promise<InspectedState>;
}

async function inspectContainer(container: string): Promise<InspectedState> {
  const out = await runPodman(['container', 'inspect', '--format', 'json', container], { expect: 'any', timeoutMs: 30_000 });
  if (out.exitCode !== 0) {
    throw new ToolError(
      'usage',
      'no-such-container',
      `container ${JSON.stringify(container)}: podman inspect failed: ${out.stderr.trim().split('\n').pop() ?? ''}`,
    );
  }
  return parseInspect(out.stdout);
}

/**
 * What the parent cgroup tells: the container's own cgroup is gone once it exits, so only a
 * session parent of ours, which outlives it, has counters and peaks; any other parent is shared.
 */
function parentEvidence(state: InspectedState): { counters: Counters; cgroup: Evidence['cgroup']; peak: Peak } {
  const where = parentFromArg(state.cgroupParent);
  if (where.sessionId === '') {
    const layout = cgroupLayout(`/${parentBase}/-none-`);
    const error = `the container's cgroup is removed when it exits and its parent ${state.cgroupParent || '(default)'} is shared: no peaks`;
    return {
      counters: {},
      cgroup: { ...cgroupEvidence(layout, state.cgroupParent, {}), error },
      peak: { memoryBytes: null, pids: null, cpuSeconds: null },
    };
  }
  const layout = cgroupLayout(where.relPath);
  const counters = readCounters(layout);
  return { counters, cgroup: cgroupEvidence(layout, state.cgroupParent, counters), peak: peakFromCounters(counters, layout.mode) };
}

export async function attributeContainer(container: string, deps: ContainerDeps = {}): Promise<PodmanAttribOutput> {
  const inspecting = (deps.inspect ?? inspectContainer)(container);
  // The kernel ring is read while podman inspects (one read() per record, ~2 400 records and
  // ~10 ms here); its lines are picked by the container's id once inspect has answered.
  const kmsg = deps.readKmsg ? deps.readKmsg(-1) : readKmsg(-1, kmsgPath, 'attribution');
  const state = await inspecting;
  if (state.status === 'running' || state.status === 'paused' || state.status === 'stopping') {
    throw new ToolError(
      'usage',
      'container-running',
      `container ${JSON.stringify(container)} is ${state.status}: attribute it after it ended`,
    );
  }
  const { counters, cgroup, peak } = parentEvidence(state);
  // The container's own cgroup (<parent>/libpod-<id>, or libpod-<id>.scope under systemd) is named in the kernel's lines.
  const kernel = kernelEvidence(kmsg, `libpod-${state.id}`);
  const eventLog = eventEvidence((deps.readEvents ?? readContainerEvents)({ id: state.id }, 0, eventLogPath()));
  const neverStarted = (state.status === 'created' || state.status === 'configured') && /^0001-01-01/.test(state.startedAt);
  const verdict = decide({
    exitCode: state.exitCode,
    kernel: kernel.state === 'read' ? kernel : undefined,
    counters,
    events: eventLog.state === 'read' ? eventLog.events : undefined,
    neverStarted,
    inspectOomKilled: state.oomKilled,
  });
  const signal = signalOfStatus(state.exitCode);
  const evidence: Evidence = {
    basis: verdict.basis,
    exit: { status: state.exitCode, source: 'inspect', ...(verdict.reason === 'signal' && signal ? { signal } : {}) },
    kernelLog: kernel,
    cgroup,
    eventLog,
    inspect: {
      status: state.status,
      oomKilled: state.oomKilled,
      error: state.error,
      startedAt: state.startedAt,
      finishedAt: state.finishedAt,
    },
  };
  return {
    ok: true,
    exitCode: state.exitCode,
    reason: verdict.reason,
    evidence,
    peak,
    container: state.name,
    containerId: state.id,
    startedAt: state.startedAt,
    endedAt: state.finishedAt,
  };
}

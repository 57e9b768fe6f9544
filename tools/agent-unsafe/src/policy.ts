/**
 * The hatch's gate: a human at a terminal, on the host, with no agent above.
 * Every check runs; all reasons found are reported, the first one is the code.
 * Nothing here can be turned off: no flag, no variable.
 */
import { ToolError } from '@agent-sandbox/shared';
import type { AgentUnsafeRefusal } from '@agent-sandbox/shared/schemas/agent-unsafe';
import { describeProcess, walkAncestry } from './ancestry.js';
import { containerEvidence } from './container-evidence.js';
import type { HostView } from './host-view.js';
import { findEnvMarkers } from './markers.js';

export interface PolicyInput {
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  env: NodeJS.ProcessEnv;
  host: HostView;
  /** Where the ancestry walk starts: our parent. */
  parentPid: number;
}

/** Every reason to refuse; empty means the hatch may open. */
export function policyRefusals(input: PolicyInput): AgentUnsafeRefusal[] {
  const reasons: AgentUnsafeRefusal[] = [];
  const notTTY = [input.stdinIsTTY ? undefined : 'stdin', input.stdoutIsTTY ? undefined : 'stdout'].filter(Boolean);
  if (notTTY.length > 0) reasons.push({ code: 'no-tty', evidence: `${notTTY.join(' and ')} not a terminal` });
  for (const evidence of containerEvidence(input.host, input.env)) reasons.push({ code: 'container-environment', evidence });
  for (const marker of findEnvMarkers(input.env)) {
    reasons.push({ code: 'agent-marker', evidence: `${marker.name} is set (by ${marker.setBy})` });
  }
  for (const proc of walkAncestry(input.host, input.parentPid).agents) {
    reasons.push({ code: 'agent-ancestor', evidence: `ancestor ${describeProcess(proc)} is an agent CLI` });
  }
  return reasons;
}

const headline: Record<AgentUnsafeRefusal['code'], string> = {
  'no-tty': 'the unsafe hatch is for a human at a terminal; stdin and stdout must both be a TTY',
  'container-environment': 'the unsafe hatch runs on a host, never inside a container',
  'agent-marker': 'an agent marker is set: an agent may not open the unsafe hatch',
  'agent-ancestor': 'an agent CLI is an ancestor of this process: an agent may not open the unsafe hatch',
};

/** Throws the refusal (exit 90) when any reason exists. */
export function enforcePolicy(input: PolicyInput): void {
  const reasons = policyRefusals(input);
  const first = reasons[0];
  if (!first) return;
  const message = `refused: ${headline[first.code]} (${reasons.map((r) => r.evidence).join('; ')})`;
  throw new ToolError('policy', first.code, message, { reasons });
}

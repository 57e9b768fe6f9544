export {
  openHatch,
  launchAttached,
  realLimitDeps,
  resolveAgentBinary,
  type HatchDeps,
  type HatchRequest,
  type HatchResult,
} from './hatch.js';
export { enforcePolicy, policyRefusals, type PolicyInput } from './policy.js';
export { containerEvidence, containerCgroupLines, environHasContainer } from './container-evidence.js';
export { walkAncestry, isAgentProcess, parseStatPpid, type ProcessInfo, type AncestryResult } from './ancestry.js';
export { envMarkers, findEnvMarkers, agentProgramNames, type EnvMarker } from './markers.js';
export {
  planLimits,
  defaultLimits,
  parseSystemdVersion,
  userManagerSocket,
  whichOnPath,
  type LaunchPlan,
  type LimitDeps,
} from './limits.js';
export { fakeHost, realHost, type HostView } from './host-view.js';
export { runtimes, runtimeNames, type Runtime } from './runtimes.js';
export { tool } from './cli.js';

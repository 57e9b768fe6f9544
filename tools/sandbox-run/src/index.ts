export { buildRunArgv, buildRunArgs, type RunFacts } from './argv.js';
export {
  preflight,
  hostPreflight,
  checkLimitsEnforceable,
  checkRuntime,
  checkImage,
  ulimitsFor,
  probeCgroupMode,
  requiredControllers,
  ulimitCeiling,
  type PreflightDeps,
} from './preflight.js';
export { runPlan, type RunHooks, type RunOutcome, type StopSignal } from './run-plan.js';
export { defaultLimits, defaultUser, resolvePlan, memoryBytes, containerNameFor, minMemoryBytes, type ResolvedPlan } from './plan.js';
export { realHostProbe, findExecutable, hardLimit, type HostProbe } from './host-probe.js';
export { imageInStorage, graphRoot, candidateNames } from './image-store.js';
export { tool } from './cli.js';
export {
  deriveProfile,
  namespaceRules,
  namespaceGaps,
  profileText,
  cloneNewFlags,
  namespaceSyscalls,
  keyringSyscalls,
  rewrittenSyscalls,
  type SeccompProfile,
  type SeccompRule,
} from './seccomp-profile.js';
export { seccompProfilePath, seccompProfileName, checkSeccompProfile } from './seccomp-location.js';

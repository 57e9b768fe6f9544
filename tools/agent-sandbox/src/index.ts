// The launcher's library surface (package.json exports "." only): for tests, the fault
// injection driver and other callers. bin/agent-sandbox runs cli.ts.
export { launch, planSession } from './launch.js';
export type { LaunchIo } from './session/launch-io.js';
export {
  requestOf,
  requestOfSession,
  sessionRequestOf,
  crossingSsh,
  defaultImage,
  type LaunchRequest,
  type Mode,
} from './session/request.js';
export { defaultRoot, defaultLedgerPath, defaultRegistryPath, homeOf, machineIdFile, pathDefaults } from './paths.js';
export { parseRequest, sessionFlags, sessionOptions } from './commands/session-flags.js';
export { sessionIdentity } from './session/identity.js';
export { composePlan, containerCommand, type SessionPlan, type SessionIdentity } from './session/compose.js';
export { receive, type ReceiverConfig, type Channel } from './receive.js';
export { acceptRequest } from './dispatch/receive-request.js';
export { buildSshArgv, knownHostsLine, dispatchOverSsh, receiverStartedTag, receiverVerdictTag } from './dispatch/ssh.js';
export { loadRegistry, pickHost, probeSsh, readMachineId, seatRole } from './dispatch/hosts.js';
export { appendLedger, boundedLedgerLine } from './ledger/append.js';
export { boundLine, maxLineBytes } from './ledger/bound.js';
export { rotateLedger, rotatedLedger, ledgerRotateBytes } from './ledger/rotate.js';
export { recentLines } from './ledger/read.js';
export { describeEnd, describeRefused } from './ledger/describe.js';
export { ranLine, refusedLine, type SessionEnd } from './ledger/verdict.js';
export { sessionEnd } from './session/end.js';
export {
  kubeManifest,
  podManifest,
  networkPolicy,
  brokerConfigMap,
  brokerConfigKey,
  memoryQuantity,
  cpuQuantity,
  pidsAnnotation,
} from './commands/kube/manifest.js';
export { resolveLayout, layoutFor, sessionsDir, workspaceIdOf, checkWorkspaceId } from './workspace/layout.js';
export { sweepAbandoned, ledgerHasRun } from './recovery/sweep.js';
export { watchDisk, duBytes, countNames, filesCeiling, pollPeriodMs, type DiskUsage } from './disk/watch.js';
export {
  look,
  lookNow,
  newLookState,
  defaultMaxDirs,
  maxPathBytes,
  racyMs,
  type LookFs,
  type LookState,
  type DirStat,
} from './disk/look.js';
export { hostLookFs } from './disk/usage.js';
export type { SessionStep, FaultHooks } from './session/faults.js';
export * from './session/preflight.js';
export { makeTool, run } from './commands/index.js';
export { formatLog } from './commands/log.js';
export { applyRetention, planRetention, defaultRetention, type RetentionPolicy, type RetentionResult } from './ledger/retention.js';

// The launcher's library surface (for tests and other callers); bin/agent-sandbox runs cli.ts.
export { launch } from './launch.js';
export type { LaunchIo } from './launch-io.js';
export { parseRequest, defaultImage, defaultRoot, sessionFlags, type LaunchRequest, type Mode } from './request.js';
export { composePlan, containerCommand, type SessionPlan, type SessionIdentity } from './compose.js';
export { receive, acceptRequest, type ReceiverConfig, type Channel } from './receiver.js';
export { buildSshArgv, knownHostsLine, dispatchOverSsh, receiverStartedTag, receiverVerdictTag } from './ssh-dispatch.js';
export { loadRegistry, pickHost, probeSsh, readMachineId, seatRole, defaultRegistryPath } from './hosts.js';
export { appendLedger, boundedLedgerLine, defaultLedgerPath } from './ledger.js';
export { boundLine, maxLineBytes } from './ledger-bound.js';
export { rotateLedger, rotatedLedger, ledgerRotateBytes } from './ledger-rotate.js';
export { kubeManifest, podManifest, networkPolicy, brokerConfigMap, brokerConfigKey, memoryQuantity, cpuQuantity, pidsAnnotation } from './kube-manifest.js';
export { resolveLayout, layoutFor, sessionsDir } from './layout.js';
export { sweepAbandoned, ledgerHasRun } from './sweep.js';
export { watchDisk, duBytes, countNames, filesCeiling, pollPeriodMs, type DiskUsage } from './disk-watch.js';
export type { SessionStep, FaultHooks } from './faults.js';
export * from './preflight.js';
export { makeTool, run } from './tool.js';
export { applyRetention, planRetention, defaultRetention, type RetentionPolicy, type RetentionResult } from './retention.js';

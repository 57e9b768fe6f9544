// The launcher's library surface (for tests and other callers); bin/agent-sandbox runs cli.ts.
export { launch, runLocal, recordVerdict, type LaunchRequest, type LaunchIo, type Mode } from './launch.js';
export { composePlan, runComposed, containerCommand, defaultImage, defaultLimits, type SessionPlan, type SessionOptions } from './session.js';
export { receive, acceptRequest, type ReceiverConfig } from './receiver.js';
export { buildSshArgv, knownHostsLine, dispatchOverSsh, receiverStartedTag, receiverVerdictTag } from './ssh-dispatch.js';
export { loadRegistry, pickHost, probeSsh, readMachineId, seatRole, defaultRegistryPath } from './hosts.js';
export { appendLedger, defaultLedgerPath } from './ledger.js';
export { podManifest, memoryQuantity, cpuQuantity, pidsAnnotation } from './kube-manifest.js';
export { runtimes, runtimeRow } from './runtimes.js';
export { resolveLayout, defaultRoot } from './session-layout.js';
export * from './preflight.js';
export type { Cores } from './cores.js';
export { realCores } from './real-cores.js';
export { makeTool, run } from './tool.js';

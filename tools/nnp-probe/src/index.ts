// The library core the launcher calls in-process; bin/nnp-probe is for shell and Python callers.
export { probe, measure, statusFileFor, type Measurement } from './probe.js';
export { execWithHandoff, runDirect, runHandoff, inTerminalForeground } from './exec.js';
export { buildHandoffArgv, escapeDollars, handoffPath, statusWrapper, expandEnvironmentSince, type HandoffPlan } from './handoff-argv.js';
export { checkUserManager } from './user-manager.js';
export { findHandoffUnit, newUnitName, unitPrefix } from './handoff-unit.js';
export { parseNoNewPrivs } from './no-new-privs.js';
export { parseSystemdVersion, detectSystemdVersion } from './systemd-version.js';
export { realDeps, type NnpDeps, type FileInfo, type CommandOutcome, type SignalSource } from './deps.js';
export { tool } from './cli.js';

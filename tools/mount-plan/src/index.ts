export { planMounts, orderMounts, type PlanOptions } from './plan-mounts.js';
export { detectGit, gitConfigValue, type GitDetection, type DetectOptions, type ReadConfigValue } from './detect-git.js';
export { readGitLink, parseGitLink, parsePathLine, readPathFile, maxGitfileBytes, type GitLink } from './git-link.js';
export { gitConfigFor, gitConfigEnv } from './git-config.js';
export { planGitStore, storeDirOf, gitLiveMount, liveNames, ownLiveNames, worktreeCopies, type PlannedStore } from './git-store.js';
export { prepareGitStore, type StoreManifest } from './prepare-store.js';
export { finishGitStore, type FinishReport, type FinishOptions } from './finish-store.js';
export { importBranch, restoreImportOwner, checkedFetchConfig, sideRefOf, type ImportInput, type ImportResult, type Advance } from './import-branch.js';
export { buildReader } from './store-reader.js';
export { readKept, maxImportRetries, retriedByNextStart, keptName, type KeptState } from './kept-store.js';
export { contentFault } from './import-fault.js';
export {
  findWritableConfig,
  checkWritableConfig,
  gitEffectiveConfig,
  parseConfigList,
  commandWord,
  type ConfigEntry,
  type ReadEffectiveConfig,
} from './config-scan.js';
export { readStoreRefs, droppedRefs, hostRefsSnapshot, parseLooseRef, parsePackedRefs, clip, type StoreRefs, type RefChange } from './store-refs.js';
export { scanNestedGit, diffNestedGit, type NestedGit, type NestedGitChange, type NestedScan } from './nested-git.js';
export { diffHostRun, isHostRunPath, hostRunSignature, type HostRunFile } from './host-run.js';
export { reservedPaths, reservedCollision, containerWorkspace, workspacesMount, homeMount, secretsMount } from './container-paths.js';
export { tool } from './cli.js';

export { planMounts, orderMounts, type PlanOptions } from './plan-mounts.js';
export { detectGit, gitConfigValue, type GitDetection, type DetectOptions, type ReadConfigValue } from './detect/detect-git.js';
export { readGitLink, parseGitLink, parsePathLine, readPathFile, maxGitfileBytes, type GitLink } from './detect/git-link.js';
export { gitConfigFor, gitConfigEnv } from './detect/git-config.js';
export { planGitStore, storeDirOf, gitLiveMount, liveNames, ownLiveNames, worktreeCopies, type PlannedStore } from './store/git-store.js';
export { prepareGitStore, type StoreManifest } from './store/prepare-store.js';
export { finishGitStore, type FinishReport, type FinishOptions } from './return/finish-store.js';
export {
  importBranch,
  restoreImportOwner,
  checkedFetchConfig,
  sideRefOf,
  waitingRefs,
  type ImportInput,
  type ImportResult,
  type Advance,
} from './return/import-branch.js';
export { buildReader } from './store/store-reader.js';
export { readKept, maxImportRetries, retriedByNextStart, keptName, type KeptState } from './return/kept-store.js';
export { contentFault } from './return/import-fault.js';
export {
  findWritableConfig,
  checkWritableConfig,
  gitEffectiveConfig,
  parseConfigList,
  commandWord,
  type ConfigEntry,
  type ReadEffectiveConfig,
} from './detect/config-scan.js';
export {
  readStoreRefs,
  droppedRefs,
  hostRefsSnapshot,
  parseLooseRef,
  parsePackedRefs,
  branchOf,
  clip,
  readPlainBounded,
  type StoreRefs,
  type RefChange,
} from './store/store-refs.js';
export { scanNestedGit, diffNestedGit, type NestedGit, type NestedGitChange, type NestedScan } from './audit/nested-git.js';
export { diffHostRun, isHostRunPath, hostRunSignature, type HostRunFile } from './audit/host-run.js';
export {
  reservedPaths,
  reservedCollision,
  containerWorkspace,
  workspacesMount,
  homeMount,
  secretsMount,
} from './detect/container-paths.js';
export { tool } from './cli.js';

export { planMounts, orderMounts, type PlanOptions } from './plan-mounts.js';
export { detectGit, gitConfigValue, type GitDetection, type DetectOptions, type ReadConfigValue } from './detect-git.js';
export { readGitLink, parseGitLink, parsePathLine, readPathFile, maxGitfileBytes, type GitLink } from './git-link.js';
export { gitConfigFor, gitConfigEnv } from './git-config.js';
export { planGitView, gitLiveMount, gitPackedMount, liveNames, sharedDirs, worktreeCopies, type PlannedView } from './git-view.js';
export { prepareGitView, type ViewManifest, type PackedMode } from './prepare-view.js';
export { finishGitView, type FinishReport } from './finish-view.js';
export {
  findWritableConfig,
  checkWritableConfig,
  gitEffectiveConfig,
  parseConfigList,
  commandWord,
  type ConfigEntry,
  type ReadEffectiveConfig,
} from './config-scan.js';
export { snapshotRefs, snapshotRefsSync, diffRefs, sessionOwnRefs, parseLooseRef, parsePackedRefs, type RefSnapshot, type RefChange } from './ref-snapshot.js';
export { scanNestedGit, diffNestedGit, type NestedGit, type NestedGitChange, type NestedScan } from './nested-git.js';
export { reservedPaths, reservedCollision, containerWorkspace, workspacesMount, homeMount, secretsMount } from './container-paths.js';
export { tool } from './cli.js';

export { planMounts, orderMounts, type PlanOptions } from './plan-mounts.js';
export { detectGit, gitConfigValue, type GitDetection, type DetectOptions, type ReadConfigValue } from './detect-git.js';
export { readGitLink, parseGitLink, parsePathLine, readPathFile, maxGitfileBytes, type GitLink } from './git-link.js';
export { gitConfigFor, gitConfigEnv } from './git-config.js';
export { reservedPaths, reservedCollision, containerWorkspace, workspacesMount, homeMount, secretsMount } from './container-paths.js';
export { tool } from './cli.js';

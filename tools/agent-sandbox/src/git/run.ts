/** The launcher's git on the host: shared with mount-plan (the session's store and its import), defined once in lib/shared. */
export { runGit, gitLine, uncommittedPaths, hardening, type GitPlace, type GitResult, type GitOptions } from '@agent-sandbox/shared/git-run';

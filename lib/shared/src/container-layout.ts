/**
 * Where a session's things appear inside the container, and who the agent is there: one
 * definition for the launcher, mount-plan, cred-stage, sandbox-run and the Pod manifest.
 */

/** The session's workspaces mount point; a session sees only its own, at <this>/<id>. */
export const workspacesMount = '/sandbox/workspaces';
/** The session's own home (host <root>/homes/<id>). */
export const containerHome = '/sandbox/home';
/** Staged credential copies, read-only (host <root>/secrets/<id>). */
export const secretsMount = '/sandbox-secrets';

/** The image's agent user (localhost/agent-sandbox): sessions run as it, with no capabilities. */
export const agentUid = 1000;
export const agentGid = 1000;
export const agentUser = `${agentUid}:${agentGid}`;

/** PATH inside the container (imported images carry none). */
export const containerPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The environment variable that names the session inside the container (recursion check). */
export const sessionEnvName = 'AGENT_SANDBOX_SESSION';

/** Where a session's workspace appears inside the container. */
export function containerWorkspace(sessionId: string): string {
  return `${workspacesMount}/${sessionId}`;
}

/** The container of a session: one per workspace at a time. */
export function containerNameFor(sessionId: string): string {
  return `agent-sandbox-${sessionId}`;
}

/**
 * The variable naming the file the container entrypoint writes its own lines to (cred-stage
 * install's output), and that file: in the session home, read by the launcher into the ledger
 * after the session (image/entrypoint.sh). Left out with --verbose: the lines go to stderr.
 */
export const entrypointLogEnvName = 'AGENT_SANDBOX_ENTRYPOINT_LOG';
export const entrypointLogName = '.agent-sandbox-entrypoint.log';
export const containerEntrypointLog = `${containerHome}/${entrypointLogName}`;

/** Where a session sees the host package caches it was given (--cache): <this>/<name>, over a private layer. */
export const cachesMount = '/sandbox/caches';

/** The package caches a session can be given (--cache), by the package manager's name. */
export const cacheNames = ['npm', 'pnpm', 'pip'] as const;

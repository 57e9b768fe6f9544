/**
 * Where things appear inside the container, and which container paths no host
 * directory may be mounted on (or above).
 */
import * as nodePath from 'node:path';
import { ToolError } from '@agent-sandbox/shared';

export const workspacesMount = '/sandbox/workspaces';
export const homeMount = '/sandbox/home';
export const secretsMount = '/sandbox-secrets';

/**
 * Container paths a same-path git or alias mount must not equal, lie under, or
 * contain: the kernel's, the sandbox's own, the secrets, and the image's system
 * directories (a mount there would shadow what the container runs on).
 */
export const reservedPaths: readonly string[] = [
  '/proc',
  '/sys',
  '/dev',
  '/sandbox',
  '/sandbox-secrets',
  '/etc',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib64',
  '/run',
  '/boot',
];

/** True when `inner` is `outer` or below it (plain string paths, already canonical). */
export function isWithin(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(outer === '/' ? '/' : `${outer}/`);
}

/** The reserved path a destination collides with, if any. */
export function reservedCollision(destination: string): string | undefined {
  return reservedPaths.find((r) => isWithin(destination, r) || isWithin(r, destination));
}

/** Refuses (87) a same-path destination that collides with a reserved container path. */
export function checkSamePathDestination(destination: string, what: string): void {
  const hit = reservedCollision(destination);
  if (hit !== undefined) {
    throw new ToolError(
      'gitMount',
      'reserved-destination',
      `${what} ${destination} would be mounted at the same path inside the container, which collides with reserved ${hit}`,
      { path: destination, reserved: hit },
    );
  }
}

/** True when `p` is absolute and already in canonical lexical form (no ., .., //, trailing /). */
export function isLexicallyCanonical(p: string): boolean {
  return p.startsWith('/') && nodePath.posix.normalize(p) === p && (p === '/' || !p.endsWith('/'));
}

export function containerWorkspace(sessionId: string): string {
  return `${workspacesMount}/${sessionId}`;
}

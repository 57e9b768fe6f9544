// What the probe session's attempts know and what their checks compare against: the host's
// own things the attacker aims at (a process, a loopback server, an abstract socket, a file in
// the host's /, a key in the host user's keyring, the credential file), the other session
// running beside it, and the mounts the session must have, derived from its request (not from
// the launcher's own plan).
import type { Workspace } from './session-kit.js';

export interface Victim {
  ws: Workspace;
  canary: string;
  /** The other session's staged credential directory on the host. */
  secretsDir: string;
  /** Its agent's pid on the host (podman inspect), once it runs. */
  agentHostPid: number;
  /** Its canary files (workspace and home) as they were when it started: path -> [content, mtimeMs]. */
  files: Map<string, [string, number]>;
}

export interface ProbeCtx {
  ws: Workspace;
  /** A `sleep` on the host, started by the test, and the marker in its argv. */
  hostPid: number;
  hostMarker: string;
  victim: Victim;
  /** A file the test put in the host's root directory (rootless: in the user's temporary directory, /tmp). */
  hostCanary: string;
  /** A TCP server on the host's 127.0.0.1 and a unix socket in the host's abstract namespace. */
  hostLoopbackPort: number;
  abstractName: string;
  /** The description of a key in the host user's (uid 1000) user keyring, and its value. */
  hostKey: { description: string; value: string };
  /** The host credential file and its bytes and mtime before the session. */
  credential: { path: string; bytes: Buffer; mtimeMs: number; canary: string };
  /**
   * Destination -> flag: the runtime's own mounts plus what the request asks for (its workspace
   * and home read-write, the codex credential and the broker's socket directory read-only).
   */
  expectedMounts: Record<string, 'ro' | 'rw'>;
  /** Destination -> the host directory the test made for it, as the host's mountinfo names it. */
  mountSources: Record<string, string>;
  /** A setuid-root binary (perl) the test planted in the workspace: its host path and its path inside. */
  setuidPlant: { host: string; inside: string };
  /** The session's --pids. */
  pidsLimit: number;
  /** How the other session ended (filled in before the checks run). */
  victimOutcome?: { exitCode: number; stdout: string };
  /** Host values read before the session. */
  host: { hostname: string; sysctl: Record<string, string> };
}

/**
 * Where the session's seccomp profile is, and the refusal when it is not usable. The file
 * ships with the tool (tools/sandbox-run/seccomp/agent-sandbox.json) and is found from the
 * code's own location, never from the environment or the plan: a caller cannot hand podman
 * a weaker one, and a missing or wrong file stops the session (83) instead of starting it
 * under podman's default, which allows unshare, setns and clone with CLONE_NEW* flags.
 */
import path from 'node:path';
import { codeDir } from '@agent-sandbox/shared/code-dir';
import { ToolError, type CodeOf } from '@agent-sandbox/shared';
import type { HostProbe } from './host-probe.js';
import { namespaceGaps } from './seccomp-profile.js';

/** The profile's file name; also the Localhost profile name a cluster installs under the kubelet's seccomp root. */
export const seccompProfileName = 'agent-sandbox.json';

/**
 * The profile for code running from `dist`. The code is always in some tools/<tool>/dist
 * (sandbox-run's own dist/*.js, its bundle, or a bundle it is part of, e.g. the launcher's
 * the launcher's bundle in tools/agent-sandbox/dist), so one rule covers all of them:
 * <dist>/../../sandbox-run/seccomp/agent-sandbox.json.
 */
export function seccompProfilePath(dist: string = codeDir(import.meta.url)): string {
  return path.resolve(dist, '..', '..', 'sandbox-run', 'seccomp', seccompProfileName);
}

function refuse(code: CodeOf<'startFailed'>, file: string, why: string): never {
  throw new ToolError(
    'startFailed',
    code,
    `containers cannot be started safely: the seccomp profile ${file} ${why}; without it podman's default would let the session create namespaces (restore the file agent-sandbox ships: git checkout -- tools/sandbox-run/seccomp)`,
    { profile: file },
  );
}

/**
 * The profile's absolute path, after reading it as the caller (podman reads it as the
 * caller too, rootless included) and checking it is this profile (namespaceGaps empty).
 * Throws ToolError 83: seccomp-profile-missing (absent or unreadable), seccomp-profile-invalid
 * (not JSON, or it does not refuse namespaces).
 */
export function checkSeccompProfile(probe: HostProbe, file: string = seccompProfilePath()): string {
  const text = probe.readFile(file);
  if (text === undefined) refuse('seccomp-profile-missing', file, 'is missing or not readable by this user');
  let profile: unknown;
  try {
    profile = JSON.parse(text);
  } catch {
    refuse('seccomp-profile-invalid', file, 'is not JSON');
  }
  const gaps = namespaceGaps(profile);
  if (gaps.length > 0)
    refuse(
      'seccomp-profile-invalid',
      file,
      `does not refuse namespace creation (${gaps.length} gap${gaps.length > 1 ? 's' : ''}: ${gaps[0]})`,
    );
  return file;
}

/**
 * The user-manager preflight: `systemd-run --user` only works with a live user
 * manager, which needs linger (or a login session), `XDG_RUNTIME_DIR=/run/user/<uid>`
 * owned by the caller, and the manager's bus socket in it. Each failed check is one
 * sentence in `problems`; the refusal (84) names `loginctl enable-linger`.
 */
import type { UserManagerReport } from '@agent-sandbox/shared/schemas/nnp-probe';
import type { FileInfo, NnpDeps } from './deps.js';

async function lstatOrNull(deps: NnpDeps, path: string): Promise<FileInfo | null> {
  try {
    return await deps.lstat(path);
  } catch {
    return null;
  }
}

/** Linger=yes from logind, else the flag file logind keeps; loginctl needs a running logind. */
async function checkLinger(deps: NnpDeps): Promise<{ linger: boolean; source: 'loginctl' | 'linger-file' | null; said: string }> {
  let said = 'loginctl absent';
  try {
    const out = await deps.query('loginctl', ['show-user', deps.user, '--property=Linger', '--value'], deps.env);
    if (out.exitCode === 0 && out.stdout.trim() === 'yes') return { linger: true, source: 'loginctl', said: 'yes' };
    said = out.exitCode === 0 ? `Linger=${out.stdout.trim()}` : (out.stderr.trim().split('\n').pop() ?? `exit ${out.exitCode}`);
  } catch {
    // loginctl missing: fall through to the flag file.
  }
  if (await lstatOrNull(deps, `${deps.lingerDir}/${deps.user}`)) return { linger: true, source: 'linger-file', said };
  return { linger: false, source: null, said };
}

/**
 * The whole preflight. `systemdVersion` null means systemd-run itself is missing; it may be
 * the pending answer, so that a caller asks systemd-run and loginctl at once.
 */
export async function checkUserManager(
  deps: NnpDeps,
  systemdVersion: number | null | PromiseLike<number | null>,
): Promise<UserManagerReport> {
  const problems: string[] = [];
  const { linger, source, said } = await checkLinger(deps);
  if (!linger) {
    problems.push(`linger is off for ${deps.user} (loginctl: ${said}; no ${deps.lingerDir}/${deps.user})`);
  }

  const dir = `${deps.runtimeRoot}/${deps.uid}`;
  const env = deps.env['XDG_RUNTIME_DIR'] ?? null;
  const dirInfo = await lstatOrNull(deps, dir);
  const exists = Boolean(dirInfo && dirInfo.isDirectory() && !dirInfo.isSymbolicLink());
  const owned = Boolean(dirInfo && dirInfo.uid === deps.uid);
  if (env !== dir) problems.push(`XDG_RUNTIME_DIR is ${env === null ? 'unset' : `"${env}"`}, expected ${dir}`);
  if (!dirInfo) problems.push(`${dir} does not exist`);
  else if (!exists) problems.push(`${dir} is not a directory`);
  else if (!owned) problems.push(`${dir} is owned by uid ${dirInfo.uid}, not ${deps.uid}`);

  const busPath = `${dir}/bus`;
  const socket = Boolean((await lstatOrNull(deps, busPath))?.isSocket());
  if (!socket) problems.push(`${busPath} is not a socket (no user manager bus)`);
  if ((await systemdVersion) === null) problems.push('systemd-run is not installed (or does not report a systemd version)');

  return {
    user: deps.user,
    uid: deps.uid,
    linger,
    lingerSource: source,
    runtimeDir: { path: dir, env, exists, owned, ok: env === dir && exists && owned },
    bus: { path: busPath, socket, ok: socket },
    ready: problems.length === 0,
    problems,
  };
}

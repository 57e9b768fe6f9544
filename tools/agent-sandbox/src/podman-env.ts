/**
 * The environment podman runs with, built from an allowlist. podman reads its own
 * configuration from the environment: CONTAINERS_CONF can name another binary as "runc"
 * (measured here: a fake runtime named that way ran), and rootless podman reads
 * $HOME/.config/containers and $XDG_CONFIG_HOME. An agent that sets those could swap the
 * runtime for one that runs its command on the host, so none of them reach podman: HOME
 * and USER come from the password database, PATH is the system's, and only the terminal
 * names the runtime table passes (and the session marker) are copied.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';

export const systemPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Variables podman itself reads that change what runs or where; dropped from the launcher's own env at start. */
export const podmanConfigVariables = [
  'CONTAINERS_CONF',
  'CONTAINERS_CONF_OVERRIDE',
  'CONTAINERS_STORAGE_CONF',
  'CONTAINERS_REGISTRIES_CONF',
  'CONTAINER_HOST',
  'CONTAINER_CONNECTION',
  'CONTAINER_SSHKEY',
  'CONTAINER_PASSPHRASE',
  'AGENT_SANDBOX_PODMAN',
];

export function podmanEnv(env: NodeJS.ProcessEnv, pass: string[]): NodeJS.ProcessEnv {
  const info = os.userInfo();
  const out: NodeJS.ProcessEnv = { PATH: systemPath, HOME: info.homedir, USER: info.username, LOGNAME: info.username };
  const runtimeDir = `/run/user/${info.uid}`;
  if (info.uid !== 0 && existsSync(runtimeDir)) out['XDG_RUNTIME_DIR'] = runtimeDir;
  for (const name of pass) if (env[name] !== undefined) out[name] = env[name];
  return out;
}

/**
 * What the launcher pins before anything else loads (tools/agent-sandbox/src/pin-environment.ts,
 * the first import of its entry, so this module stays free of dependencies). ./podman.ts builds
 * podman's environment from the same constants.
 */

/**
 * Where podman and the tools it runs are looked up: the system's directories, never a
 * directory an agent could put first on PATH.
 */
export const systemPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Variables podman itself reads that change what runs or where. Measured here:
 * CONTAINERS_CONF naming a script as "runc" makes `podman --runtime runc run` execute that
 * script on the host. None of these reach podman (podmanEnv builds its env from an allowlist);
 * the launcher also drops them from its own environment at start.
 */
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

/**
 * Variables glibc's resolver reads that could point a name somewhere else: the egress broker
 * resolves names in the launcher's process (and in its own CLI), so both drop them first.
 */
export const resolverEnvironment = ['HOSTALIASES', 'RES_OPTIONS', 'LOCALDOMAIN', 'LOCALRES'] as const;

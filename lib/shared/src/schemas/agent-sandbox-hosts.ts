/**
 * The hosts registry (${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json): the machines a
 * launcher may run sessions on, their roles, their identity, and how ssh reaches them with a
 * pinned host key (tools/agent-sandbox/src/dispatch/).
 */
import { AbsolutePath, Closed, Type, type Static } from '../schema.js';

export const HostSsh = Closed({
  address: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9._:-]+$', description: 'host name or IP (no user@, no options)' }),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  user: Type.String({ minLength: 1, pattern: '^[a-z_][a-z0-9_-]*$' }),
  hostKey: Type.String({ minLength: 1, pattern: '^(ssh-|ecdsa-)[a-z0-9-]+ [A-Za-z0-9+/=]+$', description: 'the pinned host public key ("ssh-ed25519 AAAA...")' }),
  identityFile: AbsolutePath,
});
export type HostSsh = Static<typeof HostSsh>;

export const HostEntry = Closed({
  name: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9._-]+$' }),
  roles: Type.Array(Type.String({ minLength: 1 })),
  machineId: Type.String({ pattern: '^[0-9a-f]{32}$', description: "the node's /etc/machine-id" }),
  ssh: Type.Optional(HostSsh),
});
export type HostEntry = Static<typeof HostEntry>;

export const HostsRegistry = Closed(
  {
    version: Type.Literal(1),
    hosts: Type.Array(HostEntry),
  },
  { $id: 'agent-sandbox.hosts' },
);
export type HostsRegistry = Static<typeof HostsRegistry>;

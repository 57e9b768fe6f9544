import { Closed, Type, type Static } from '../schema.js';

/** `XDG_RUNTIME_DIR=/run/user/<uid>` in the environment, present as a directory, owned by the caller. */
export const RuntimeDirCheck = Closed(
  {
    path: Type.String({ description: 'the expected runtime directory, /run/user/<uid>' }),
    env: Type.Union([Type.String(), Type.Null()], { description: 'XDG_RUNTIME_DIR as the caller has it, or null' }),
    exists: Type.Boolean({ description: 'path is a directory (not a symlink)' }),
    owned: Type.Boolean({ description: "path is owned by the caller's uid" }),
    ok: Type.Boolean({ description: 'env equals path, and it exists and is owned' }),
  },
  { description: "the user manager's runtime directory" },
);

/** `/run/user/<uid>/bus` is a socket. */
export const BusCheck = Closed(
  {
    path: Type.String({ description: '/run/user/<uid>/bus' }),
    socket: Type.Boolean({ description: 'path is a unix socket' }),
    ok: Type.Boolean(),
  },
  { description: "the user manager's D-Bus socket" },
);

export const UserManagerReport = Closed(
  {
    user: Type.String({ description: 'the user whose manager systemd-run --user would talk to' }),
    uid: Type.Integer({ minimum: 0 }),
    linger: Type.Boolean({ description: 'Linger=yes from loginctl, or /var/lib/systemd/linger/<user> exists' }),
    lingerSource: Type.Union([Type.Literal('loginctl'), Type.Literal('linger-file'), Type.Null()], {
      description: 'which source said yes (null: neither did)',
    }),
    runtimeDir: RuntimeDirCheck,
    bus: BusCheck,
    ready: Type.Boolean({ description: 'linger, runtimeDir.ok, bus.ok and systemd-run present' }),
    problems: Type.Array(Type.String(), { description: 'one sentence per failed check; empty when ready' }),
  },
  { description: 'the preflight a systemd-run --user handoff needs' },
);
export type UserManagerReport = Static<typeof UserManagerReport>;

export const NnpProbeOutput = Closed(
  {
    ok: Type.Literal(true),
    noNewPrivs: Type.Boolean({ description: 'NoNewPrivs from this process\'s own /proc/self/status' }),
    reexec: Type.Boolean({ description: 'exec would hand off through systemd-run --user (noNewPrivs and not already inside a handoff unit)' }),
    insideHandoff: Type.Union([Type.String(), Type.Null()], {
      description: 'the agent-sandbox-nnp-*.service unit this process runs in (from /proc/self/cgroup), or null',
    }),
    systemdVersion: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'from `systemd-run --version`; null when systemd-run is absent',
    }),
    userManager: UserManagerReport,
    argv: Type.Array(Type.String(), {
      description: 'the systemd-run argv exec would run (for the command after --, if given); [] when no re-exec is needed',
    }),
  },
  { $id: 'nnp-probe.output' },
);
export type NnpProbeOutput = Static<typeof NnpProbeOutput>;

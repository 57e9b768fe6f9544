import { AbsolutePath, Closed, ContainerNetwork, Mount, SizeText, Type, type Static } from '../schema.js';

function memorySize(description: string) {
  return Type.Union([SizeText, Type.Integer({ minimum: 1, description: 'bytes' })], { description });
}

export const RunLimits = Closed(
  {
    memory: memorySize('memory limit (--memory): "512m", "12g" or bytes; at least 6m'),
    memorySwap: memorySize('memory + swap (--memory-swap), at least memory; equal to memory means no swap'),
    pids: Type.Integer({ minimum: 1, description: 'maximum tasks in the container (--pids-limit)' }),
    cpus: Type.Number({ exclusiveMinimum: 0, description: 'CPU quota in CPUs (--cpus), e.g. 0.5 or 4' }),
    cpuShares: Type.Integer({ minimum: 2, maximum: 262144, description: 'relative CPU weight (--cpu-shares)' }),
  },
  { $id: 'sandbox-run.limits', description: 'every limit is required and positive; nothing falls back to "unlimited"' },
);
export type RunLimits = Static<typeof RunLimits>;

/** Characters podman accepts in a container name; also used for the session id. */
const namePattern = '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$';

export const RunPlan = Closed(
  {
    image: Type.String({ minLength: 1, pattern: '^[^\\s]+$', description: 'a local image; sandbox-run never pulls' }),
    sessionId: Type.String({ pattern: namePattern, description: 'the session; the default container name is agent-sandbox-<sessionId>' }),
    name: Type.Optional(Type.String({ pattern: namePattern, description: 'container name (default agent-sandbox-<sessionId>)' })),
    cgroupParent: Type.Optional(
      Type.String({
        pattern: '^(/[A-Za-z0-9_.@:-]+)+$|^([A-Za-z0-9_.@:-]|\\\\x[0-9a-f]{2})+\\.slice$',
        description: '--cgroup-parent: a caller-owned cgroup path (cgroupfs manager) or a slice (systemd manager; \\xNN escapes as systemd writes them, e.g. \\x2d for a dash that must not nest)',
      }),
    ),
    cidfile: Type.Optional(
      Type.String({ pattern: '^/[^,\\s]*$', description: "--cidfile: where podman writes the container's id (must not exist yet); attribution tells this container's kernel-log records by it" }),
    ),
    network: Type.Optional(ContainerNetwork),
    mounts: Type.Optional(Type.Array(Mount, { description: 'bind mounts; default none' })),
    limits: RunLimits,
    env: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), {
        description: "names of variables passed from sandbox-run's environment (values never appear in the argv)",
      }),
    ),
    command: Type.Optional(
      Type.Array(Type.String(), { minItems: 1, description: "argv of the contained command (default: the image's command)" }),
    ),
    tty: Type.Optional(Type.Boolean({ description: 'allocate a terminal (-t); default false' })),
    timeoutSeconds: Type.Optional(
      Type.Integer({ minimum: 1, description: 'podman run --timeout: conmon kills the container after this many seconds, whatever becomes of the caller' }),
    ),
    interactive: Type.Optional(Type.Boolean({ description: 'keep stdin attached (-i); default true' })),
    workdir: Type.Optional(AbsolutePath),
    user: Type.Optional(Type.String({ pattern: '^[0-9]+(:[0-9]+)?$', description: 'uid[:gid] inside the container; default 1000:1000; 0 is refused' })),
    remove: Type.Optional(
      Type.Boolean({ description: 'podman run --rm (default true); false keeps the container until after hooks.beforeRemove, then removes it' }),
    ),
    readOnlyRoot: Type.Optional(
      Type.Boolean({ description: 'read-only image root with tmpfs /tmp, /var/tmp, /run (default true)' }),
    ),
  },
  { $id: 'sandbox-run.input', description: 'a run plan: what to run in one container, and with which limits' },
);
export type RunPlan = Static<typeof RunPlan>;

export const SandboxRunDryRun = Closed(
  {
    ok: Type.Literal(true),
    argv: Type.Array(Type.String(), { description: 'the exact podman argv sandbox-run would execute' }),
  },
  { $id: 'sandbox-run.dry-run.output' },
);
export type SandboxRunDryRun = Static<typeof SandboxRunDryRun>;

/**
 * A run plan after the schema: the checks a JSON Schema cannot state (sizes in
 * bytes, swap >= memory, mount paths podman's --mount syntax can carry, one
 * mount per destination) and the defaults, in one place.
 */
import path from 'node:path';
import { ToolError, validateDocument } from '@agent-sandbox/shared';
import { RunPlan, type RunLimits } from '@agent-sandbox/shared/validators/sandbox-run';
import { checkMemoryPair, defaultLimits as sharedDefaults, minMemoryBytes, parseSize } from '@agent-sandbox/shared/limits';
import { agentUser, containerNameFor } from '@agent-sandbox/shared/container-layout';

/** The shared defaults (lib/shared/src/limits.ts, beside the rule that produced them), the podman part. */
export const defaultLimits: Readonly<RunLimits> = Object.freeze({
  memory: sharedDefaults.memory,
  memorySwap: sharedDefaults.memorySwap,
  pids: sharedDefaults.pids,
  cpus: sharedDefaults.cpus,
  cpuShares: sharedDefaults.cpuShares,
});

/** The image's agent user; with --cap-drop=ALL nothing inside can switch users, so we start as it. */
export const defaultUser = agentUser;

export { minMemoryBytes, containerNameFor };

/** A plan with every default filled in. */
export interface ResolvedPlan {
  image: string;
  sessionId: string;
  name: string;
  cgroupParent: string | undefined;
  cidfile: string | undefined;
  network: string;
  mounts: { source: string; destination: string; readOnly: boolean; overlay?: { upper: string; work: string } }[];
  limits: RunLimits;
  env: string[];
  command: string[];
  tty: boolean;
  interactive: boolean;
  timeoutSeconds: number | undefined;
  workdir: string | undefined;
  user: string;
  remove: boolean;
  readOnlyRoot: boolean;
}

/** "512m" -> 536870912; integers are bytes already (the shared parser: what podman accepts). */
export function memoryBytes(size: string | number): number {
  return parseSize('memory size', size);
}

const fieldNames = { memory: 'input.limits.memory', memorySwap: 'input.limits.memorySwap' };

function checkLimits(limits: RunLimits): void {
  checkMemoryPair(limits.memory, limits.memorySwap, fieldNames);
}

/** Paths travel inside `--mount type=bind,source=...,destination=...`: no commas, no control characters, no dot segments. */
function checkMountPath(value: string, field: string): void {
  const bad = (why: string) => new ToolError('usage', 'invalid-field', `${field}: ${why}, got ${JSON.stringify(value)}`, { field });
  if (/[,\0-\x1f\x7f]/.test(value)) throw bad('must not contain a comma or a control character');
  if (value.split('/').some((seg) => seg === '.' || seg === '..')) throw bad('must not contain "." or ".." segments');
  if (value !== '/' && value.endsWith('/')) throw bad('must not end with "/"');
}

/** An overlay travels in `--volume SOURCE:DESTINATION:O,upperdir=U,workdir=W`: no colon or comma in its paths, and never read-only (the layer is the point). */
function checkOverlay(m: ResolvedPlan['mounts'][number], i: number): void {
  const field = `input.mounts[${i}]`;
  if (m.readOnly)
    throw new ToolError('usage', 'invalid-field', `${field}: an overlay mount is writable in its own layer; readOnly must be false`, {
      field,
    });
  checkMountPath(m.overlay!.upper, `${field}.overlay.upper`);
  checkMountPath(m.overlay!.work, `${field}.overlay.work`);
  for (const value of [m.source, m.destination, m.overlay!.upper, m.overlay!.work]) {
    if (value.includes(':'))
      throw new ToolError(
        'usage',
        'invalid-field',
        `${field}: an overlay mount's paths must not contain a colon, got ${JSON.stringify(value)}`,
        { field },
      );
  }
}

function checkMounts(mounts: ResolvedPlan['mounts']): void {
  const seen = new Map<string, number>();
  mounts.forEach((m, i) => {
    checkMountPath(m.source, `input.mounts[${i}].source`);
    checkMountPath(m.destination, `input.mounts[${i}].destination`);
    if (m.overlay) checkOverlay(m, i);
    const field = `input.mounts[${i}].destination`;
    if (m.destination === '/') throw new ToolError('usage', 'invalid-field', `${field}: cannot mount over the container's root`, { field });
    const dest = path.posix.normalize(m.destination);
    const earlier = seen.get(dest);
    if (earlier !== undefined) {
      throw new ToolError('usage', 'duplicate-destination', `${field}: ${dest} is already the destination of input.mounts[${earlier}]`, {
        field,
      });
    }
    seen.set(dest, i);
  });
}

function checkUser(user: string): void {
  if (user.split(':')[0]?.replace(/^0+(?=\d)/, '') === '0') {
    throw new ToolError(
      'usage',
      'invalid-field',
      'input.user: uid 0 is refused: with rootful podman and no user namespace it is host root for every bind-mounted file',
      { field: 'input.user' },
    );
  }
}

/** Plans this module resolved (frozen), so resolving again is free and never re-validates defaults as input. */
const resolvedPlans = new WeakSet<object>();

/** Validates a plan (schema, then the semantic checks) and fills the defaults; refusals exit 80 naming the field. */
export function resolvePlan(input: unknown): ResolvedPlan {
  if (typeof input === 'object' && input !== null && resolvedPlans.has(input)) return input as ResolvedPlan;
  const plan = validateDocument(RunPlan, input);
  checkLimits(plan.limits);
  const mounts = plan.mounts ?? [];
  checkMounts(mounts);
  const user = plan.user ?? defaultUser;
  checkUser(user);
  const resolved: ResolvedPlan = {
    image: plan.image,
    sessionId: plan.sessionId,
    name: plan.name ?? containerNameFor(plan.sessionId),
    cgroupParent: plan.cgroupParent,
    cidfile: plan.cidfile,
    network: plan.network ?? 'none',
    mounts,
    limits: plan.limits,
    env: plan.env ?? [],
    command: plan.command ?? [],
    tty: plan.tty ?? false,
    interactive: plan.interactive ?? true,
    timeoutSeconds: plan.timeoutSeconds,
    workdir: plan.workdir,
    user,
    remove: plan.remove ?? true,
    readOnlyRoot: plan.readOnlyRoot ?? true,
  };
  Object.freeze(resolved);
  resolvedPlans.add(resolved);
  return resolved;
}

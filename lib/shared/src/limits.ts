/**
 * A session's declared limits, defined once: how a size or a duration is written, what is
 * refused, and the defaults beside the rule that produced them. The launcher, sandbox-run, the
 * Pod manifest and the hatch all parse with these functions, so a value one accepts the others
 * accept, and a refusal names the flag (or field) the caller typed.
 */
import { ToolError } from './tool-error.js';

const kib = 1024;
/** Units as podman takes them (go-units RAMInBytes): every multiple is binary, b/i suffixes optional. */
const unitBytes: Record<string, number> = { '': 1, k: kib, m: kib ** 2, g: kib ** 3, t: kib ** 4, p: kib ** 5 };
const sizePattern = /^([0-9]+(?:\.[0-9]+)?) ?([kmgtp]?)(?:i?b)?$/i;

/** podman refuses (or runc fails) below this memory limit. */
export const minMemoryBytes = 6 * kib ** 2;
/** A session needs room to write at least its own home. */
export const minDiskBytes = 64 * kib ** 2;

function refuse(field: string, why: string, value: unknown): never {
  throw new ToolError('usage', 'invalid-field', `${field}: ${why}, got ${JSON.stringify(value)}`, { field });
}

/** "512m", "4G", "1.5g", "268435456", "512MiB" -> bytes (what podman's --memory accepts). */
export function parseSize(field: string, value: string | number): number {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value > 0) return value;
    refuse(field, 'expected a positive whole number of bytes', value);
  }
  const match = sizePattern.exec(value.trim());
  if (!match) refuse(field, 'expected a size such as 512m, 4g or a number of bytes', value);
  const bytes = Math.floor(Number(match[1]) * (unitBytes[(match[2] ?? '').toLowerCase()] ?? 1));
  if (!(bytes > 0)) refuse(field, 'expected a size above zero', value);
  return bytes;
}

const durationPattern = /^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$/;

/** "90s", "45m", "2h", "1h30m", or plain seconds -> seconds. */
export function parseDuration(field: string, value: string | number): number {
  if (typeof value === 'number' || /^[0-9]+$/.test(String(value))) {
    const seconds = Number(value);
    if (Number.isInteger(seconds) && seconds > 0) return seconds;
    refuse(field, 'expected a positive whole number of seconds', value);
  }
  const match = durationPattern.exec(String(value).trim());
  if (!match || !(match[1] || match[2] || match[3])) refuse(field, 'expected a duration such as 90s, 45m, 2h or 1h30m', value);
  const seconds = Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
  if (seconds <= 0) refuse(field, 'expected a duration above zero', value);
  return seconds;
}

/** Bytes as the shortest exact size string ("4g", "256m", "1536k"). */
export function formatSize(bytes: number): string {
  for (const unit of ['p', 't', 'g', 'm', 'k'] as const) {
    const per = unitBytes[unit]!;
    if (bytes >= per && bytes % per === 0) return `${bytes / per}${unit}`;
  }
  return String(bytes);
}

/** Seconds as "2h", "1h30m", "90s". */
export function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s || seconds === 0 ? `${s}s` : ''}`;
}

/** The limits as typed (sizes and durations as strings) and as numbers, after every check. */
export interface Limits {
  memory: string;
  memorySwap: string;
  pids: number;
  cpus: number;
  cpuShares: number;
  disk: string;
  timeout: string;
}

/** The names a caller used for each limit (flags for the launcher, fields for a JSON plan). */
export type LimitFieldNames = Record<keyof Limits, string>;

export const flagNames: LimitFieldNames = {
  memory: '--memory',
  memorySwap: '--memory-swap',
  pids: '--pids',
  cpus: '--cpus',
  cpuShares: '--cpu-shares',
  disk: '--disk',
  timeout: '--timeout',
};

function integerIn(field: string, value: unknown, min: number, max: number): number {
  const n = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
    refuse(field, `expected a whole number from ${min} to ${max}`, value);
  return n;
}

/** memory at least 6m and memory-swap at least memory (equal: no swap); returns both in bytes. */
export function checkMemoryPair(
  memory: string | number,
  memorySwap: string | number,
  names: Pick<LimitFieldNames, 'memory' | 'memorySwap'> = flagNames,
) {
  const memoryBytes = parseSize(names.memory, memory);
  if (memoryBytes < minMemoryBytes) refuse(names.memory, `must be at least 6m (${minMemoryBytes} bytes)`, memory);
  const swapBytes = parseSize(names.memorySwap, memorySwap);
  if (swapBytes < memoryBytes) refuse(names.memorySwap, `must be at least ${names.memory} (${memoryBytes} bytes)`, memorySwap);
  return { memoryBytes, swapBytes };
}

/**
 * Checks a complete set of limits; refusals (80) name the field the caller typed. memory-swap
 * below memory, memory below 6m, and swap without a bound are refused: nothing falls back to
 * "unlimited".
 */
export function checkLimits(limits: Limits, names: LimitFieldNames = flagNames): Limits {
  checkMemoryPair(limits.memory, limits.memorySwap, names);
  const pids = integerIn(names.pids, limits.pids, 1, 4_194_304);
  const cpus = typeof limits.cpus === 'string' ? Number(limits.cpus) : limits.cpus;
  if (typeof cpus !== 'number' || !Number.isFinite(cpus) || cpus <= 0 || cpus > 1024)
    refuse(names.cpus, 'expected a number above 0 and at most 1024', limits.cpus);
  const cpuShares = integerIn(names.cpuShares, limits.cpuShares, 2, 262_144);
  const disk = parseSize(names.disk, limits.disk);
  if (disk < minDiskBytes) refuse(names.disk, 'must be at least 64m', limits.disk);
  parseDuration(names.timeout, limits.timeout);
  return { memory: limits.memory, memorySwap: limits.memorySwap, pids, cpus, cpuShares, disk: limits.disk, timeout: limits.timeout };
}

/**
 * What real sessions measured (scripts/measure-agents.mjs, 5 runs each of the real Codex CLI
 * and Claude Code editing, testing and committing a project inside the container): the largest
 * peak of each, over both CLIs.
 */
export const measuredPeaks = {
  memoryMiB: 170.4,
  pids: 50,
  cpuPerWallSecond: 0.95,
} as const;

const powerOfTwoAtLeast = (n: number) => 2 ** Math.ceil(Math.log2(n));

/**
 * The rule that turns the measurement into defaults, stated once:
 * - memory = 16 x the largest peak, rounded up to a power of two GiB (real sessions grow, and
 *   the project's own builds and tests share the cgroup); memory-swap = memory (no swap);
 * - pids = 8 x the largest peak, rounded up to a power of two, at least 256;
 * - cpus = 2 x the highest CPU per wall second, rounded up, at least 2;
 * - cpu-shares 512: half podman's default weight, a priority choice rather than a measurement;
 * - disk = 8g: room for a dependency install and a build's outputs (a fresh node_modules or a
 *   target/ directory is 0.5-5 GB); the launcher lowers it to half the root filesystem's free
 *   space when that is less, and refuses a --disk the filesystem cannot hold;
 * - timeout = 2h: cred-stage's default session length, so a staged credential is checked to be
 *   valid for the whole session.
 */
export function deriveLimits(peaks: { memoryMiB: number; pids: number; cpuPerWallSecond: number } = measuredPeaks): Limits {
  const memoryGiB = powerOfTwoAtLeast((16 * peaks.memoryMiB) / 1024);
  const memory = `${memoryGiB}g`;
  return {
    memory,
    memorySwap: memory,
    pids: Math.max(256, powerOfTwoAtLeast(8 * peaks.pids)),
    cpus: Math.max(2, Math.ceil(2 * peaks.cpuPerWallSecond)),
    cpuShares: 512,
    disk: '8g',
    timeout: '2h',
  };
}

/** Bytes of --disk per file the session may make: the ratio ext4 sizes its inode table with. */
export const bytesPerFile = 16 * 1024;

/**
 * --disk also bounds how many files, directories and links the session makes in its workspace
 * and home: one per 16 KiB of --disk (8g: 524 288; 1g: 65 536). Empty files cost no bytes, so
 * the byte ceiling alone let a loop of them take every inode of the host's filesystem (1.87 M
 * files in 40 s measured under --disk 1g; the host had 16.7 M). 16 KiB is the ratio mke2fs
 * gives ext4 by default (inode_ratio 16384; this host's root: 252 GiB, 16.7 M inodes): a
 * session that uses all of its --disk uses no larger a share of the inodes than of the blocks,
 * so sessions cannot run the host out of inodes before they run it out of space. Real trees
 * stay below it: a node_modules of 100 000 files takes 0.5-1 GB, a fifth of what 8g allows in
 * files. The launcher lowers it to half the filesystem's free inodes when that is less (as it
 * does bytes).
 */
export function filesForDisk(diskBytes: number): number {
  return Math.floor(diskBytes / bytesPerFile);
}

/** The defaults every tool uses: 4g, 4g, 512, 2, 512, 8g, 2h. */
export const defaultLimits: Readonly<Limits> = Object.freeze(deriveLimits());

/**
 * Limits from flags (or fields) given as strings or numbers, over the defaults. Given
 * --memory without --memory-swap, swap equals memory (no swap), never the default swap.
 */
export function limitsFrom(given: Partial<Record<keyof Limits, unknown>>, names: LimitFieldNames = flagNames): Limits {
  const text = (key: keyof Limits, fallback: string): string => {
    const v = given[key];
    if (v === undefined) return fallback;
    if (typeof v === 'number') return String(v);
    if (typeof v !== 'string' || v.trim() === '') refuse(names[key], 'expected a value', v);
    return v.trim();
  };
  const memory = text('memory', defaultLimits.memory);
  return checkLimits(
    {
      memory,
      memorySwap: text('memorySwap', given['memory'] === undefined ? defaultLimits.memorySwap : memory),
      pids: (given['pids'] ?? defaultLimits.pids) as number,
      cpus: (given['cpus'] ?? defaultLimits.cpus) as number,
      cpuShares: (given['cpuShares'] ?? defaultLimits.cpuShares) as number,
      disk: text('disk', defaultLimits.disk),
      timeout: text('timeout', defaultLimits.timeout),
    },
    names,
  );
}

/**
 * The session's seccomp profile: podman's default (containers-common's seccomp.json) with
 * every way to make or enter a namespace refused. Pure: a profile object in, a profile object
 * out, so the committed file (seccomp/agent-sandbox.json) is checkably what this makes from
 * the default it was derived from (seccomp/derive.mjs, test/seccomp-profile-derivation).
 *
 * The entry points, and what each gets:
 * - unshare(2): allowed only when its flags hold no CLONE_NEW* bit (CLONE_FILES, CLONE_FS and
 *   CLONE_SYSVSEM stay usable); any CLONE_NEW* bit: EPERM.
 * - clone(2): the same test on its flags (fork, threads, posix_spawn's CLONE_VM|CLONE_VFORK
 *   pass). The flags are argument 0 on x86_64/x86/x32 and aarch64/arm (and mips); on s390 and
 *   s390x clone takes (stack, flags), so there the rules test argument 1.
 * - clone3(2): its flags are in a struct in memory, which seccomp cannot read, so it is
 *   refused whole with ENOSYS: glibc (2.34+) then falls back to clone(2), where the flags
 *   are visible. EPERM would make glibc's pthread_create and posix_spawn fail instead.
 * - setns(2): EPERM always (also for CAP_SYS_ADMIN, which the default would allow it for):
 *   entering a namespace is never a session's business.
 * Not rules, and why: opening /proc/<pid>/ns/* or ioctl(NS_GET_USERNS, NS_GET_PARENT) only
 * yields descriptors of namespaces that exist, usable only through setns; CLONE_NEWTIME is
 * 0x80, which legacy clone(2) reads as part of the exit signal, so only unshare (masked here)
 * and clone3 (refused) can ask for it.
 */

/** One syscall rule as containers-common's seccomp.json writes it (and podman, CRI-O, containerd read it). */
export interface SeccompRule {
  names: string[];
  action: string;
  args?: { index: number; value: number; valueTwo: number; op: string }[] | null;
  comment?: string;
  includes?: { arches?: string[]; caps?: string[]; minKernel?: string };
  excludes?: { arches?: string[]; caps?: string[]; minKernel?: string };
  errnoRet?: number;
  errno?: string;
  [key: string]: unknown;
}

export interface SeccompProfile {
  defaultAction: string;
  syscalls: SeccompRule[];
  [key: string]: unknown;
}

/** The namespace bits of clone(2)/unshare(2) flags (linux/sched.h). */
export const cloneNewFlags = {
  CLONE_NEWTIME: 0x00000080,
  CLONE_NEWNS: 0x00020000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
} as const;

/** The syscalls the default allows and this profile rewrites for namespaces. */
export const namespaceSyscalls = ['clone', 'clone3', 'setns', 'unshare'] as const;

/**
 * keyctl(2): kernel keys are per uid, and rootful podman runs the agent as the host user's uid
 * 1000 with no user namespace, so the default's allow let a session read, rewrite, delete and
 * plant keys in that user's keyrings (found by the escape-attempt suite). Refused as podman's
 * default already refuses add_key and request_key: ENOSYS.
 */
export const keyringSyscalls = ['keyctl'] as const;

/** Every syscall whose rules this profile rewrites. */
export const rewrittenSyscalls: readonly string[] = [...namespaceSyscalls, ...keyringSyscalls];

const EPERM = 1;
const ENOSYS = 38;
/** Architectures (Go names, as podman matches `includes.arches`) whose clone(2) takes the flags second. */
const flagsSecond = ['s390', 's390x'];

/** The mask of every CLONE_NEW* bit a syscall reads: clone(2) never sees CLONE_NEWTIME (see above). */
function namespaceBits(syscall: 'clone' | 'unshare'): [string, number][] {
  return Object.entries(cloneNewFlags).filter(([name]) => syscall === 'unshare' || name !== 'CLONE_NEWTIME');
}

type Scope = Pick<SeccompRule, 'includes' | 'excludes'>;
const everywhere: Scope = { includes: {}, excludes: {} };

/** Allow `syscall` when flags argument `index` has no namespace bit; one EPERM rule per bit otherwise. */
function flagRules(syscall: 'clone' | 'unshare', index: number, scope: Scope): SeccompRule[] {
  const bits = namespaceBits(syscall);
  const mask = bits.reduce((sum, [, bit]) => sum + bit, 0);
  return [
    {
      names: [syscall],
      action: 'SCMP_ACT_ALLOW',
      args: [{ index, value: mask, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }],
      comment: `agent-sandbox: ${syscall} without any CLONE_NEW* flag (mask 0x${mask.toString(16)} of argument ${index})`,
      ...scope,
    },
    ...bits.map(([name, bit]) => ({
      names: [syscall],
      action: 'SCMP_ACT_ERRNO',
      args: [{ index, value: bit, valueTwo: bit, op: 'SCMP_CMP_MASKED_EQ' }],
      comment: `agent-sandbox: ${syscall} with ${name} is refused (no namespaces inside a session)`,
      ...scope,
      errnoRet: EPERM,
      errno: 'EPERM',
    })),
  ];
}

/** The rules appended to the default's: one place says what each namespace entry point gets. */
export function namespaceRules(): SeccompRule[] {
  return [
    ...flagRules('clone', 0, { includes: {}, excludes: { arches: flagsSecond } }),
    ...flagRules('clone', 1, { includes: { arches: flagsSecond }, excludes: {} }),
    ...flagRules('unshare', 0, everywhere),
    {
      names: ['clone3'],
      action: 'SCMP_ACT_ERRNO',
      args: [],
      comment: 'agent-sandbox: clone3 flags are not visible to seccomp; ENOSYS makes glibc fall back to clone, whose flags are',
      includes: {},
      excludes: {},
      errnoRet: ENOSYS,
      errno: 'ENOSYS',
    },
    {
      names: ['setns'],
      action: 'SCMP_ACT_ERRNO',
      args: [],
      comment: 'agent-sandbox: entering another namespace is refused, whatever the capabilities',
      includes: {},
      excludes: {},
      errnoRet: EPERM,
      errno: 'EPERM',
    },
    {
      names: ['keyctl'],
      action: 'SCMP_ACT_ERRNO',
      args: [],
      comment:
        "agent-sandbox: the host user's kernel keyrings are out of reach (keys are per uid; add_key and request_key are refused by the default)",
      includes: {},
      excludes: {},
      errnoRet: ENOSYS,
      errno: 'ENOSYS',
    },
  ];
}

/**
 * The default profile with the four namespace syscalls taken out of every rule that names
 * them (the unconditional allow group and the CAP_SYS_ADMIN pair for setns; a rule left with
 * no name is dropped) and namespaceRules() appended. Everything else is kept as it is.
 */
export function deriveProfile(defaultProfile: SeccompProfile): SeccompProfile {
  const rewritten = new Set<string>(rewrittenSyscalls);
  const syscalls = defaultProfile.syscalls
    .map((rule) => ({ ...rule, names: rule.names.filter((n) => !rewritten.has(n)) }))
    .filter((rule) => rule.names.length > 0);
  return { ...structuredClone(defaultProfile), syscalls: [...structuredClone(syscalls), ...namespaceRules()] };
}

/** The file's text: tab-indented like containers-common's, so a diff against the default shows only the changes. */
export function profileText(profile: SeccompProfile): string {
  return `${JSON.stringify(profile, null, '\t')}\n`;
}

/**
 * What keeps `profile` from being this profile's namespace policy: rules of namespaceRules()
 * it lacks, and other rules naming one of the four syscalls (an allow there would win).
 * Empty: the profile refuses namespaces as derived. Cheap (a few hundred comparisons), so
 * the preflight checks the file it hands podman every time.
 */
export function namespaceGaps(profile: unknown): string[] {
  const p = profile as Partial<SeccompProfile> | null;
  if (!p || typeof p !== 'object' || typeof p.defaultAction !== 'string' || !Array.isArray(p.syscalls)) {
    return ['not a seccomp profile (no defaultAction and syscalls)'];
  }
  // Only rules naming one of the four are looked at (about 35 of the profile's rules; the
  // allow group of ~370 names is skipped): a cold first check costs well under a millisecond.
  const ours = new Map(namespaceRules().map((rule) => [JSON.stringify(rule), rule]));
  const found = new Set<string>();
  const others: string[] = [];
  for (const rule of p.syscalls) {
    const names: unknown[] = Array.isArray(rule?.names) ? rule.names : [];
    const touched = names.filter((n): n is string => (rewrittenSyscalls as readonly unknown[]).includes(n));
    if (touched.length === 0) continue;
    const key = JSON.stringify(rule);
    if (ours.has(key)) found.add(key);
    else others.push(`another rule (${String(rule.action)}) names ${touched.join(', ')}`);
  }
  const gaps = [...ours].filter(([key]) => !found.has(key)).map(([, rule]) => `missing: ${rule.comment}`);
  gaps.push(...others);
  return gaps;
}

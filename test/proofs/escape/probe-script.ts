// One probe session runs many attempts: each is a piece of sh that an attacker inside would
// run, framed so that its output (stdout and stderr, in order) comes back as its own section.
// The attempts are a table; the suite makes one test per row and counts the rows it checked.

/** What a check may assert with: tap's `t` (each method takes the value(s), then a message). */
type Assertion = (...args: any[]) => unknown;
export interface Asserts {
  ok: Assertion;
  notOk: Assertion;
  equal: Assertion;
  not: Assertion;
  match: Assertion;
  notMatch: Assertion;
  same: Assertion;
  comment: Assertion;
}

export interface Attempt<Ctx> {
  /** Section name: [a-z0-9-]. */
  key: string;
  /** The test title: the claim, stated as what holds. */
  claim: string;
  /** The same claim in a peer's suite (sandbox-runtime, codex's linux-sandbox), when there is one. */
  peer?: string;
  /** sh run inside as the agent, in a subshell; $ASTEST is the helper directory, sc() a raw syscall. */
  script: (ctx: Ctx) => string;
  /** Assertions on the section's output, and on the host where it matters. */
  check: (t: Asserts, out: string, ctx: Ctx) => void | Promise<void>;
  /**
   * Why the row cannot apply to a rootless launcher (its plant or its control needs root): its
   * test skips with this reason there, which scripts/skips.mjs allows on the vm-user tier alone.
   * The attempt still runs in the probe session.
   */
  rootOnly?: string;
}

export function titleOf(a: { claim: string; peer?: string }): string {
  return a.peer ? `${a.claim} [peer: ${a.peer}]` : a.claim;
}

/**
 * The whole probe program: a prelude, then every attempt framed by @@begin/@@end lines. The
 * attempts name system calls by their x86_64 numbers (sc.pl, keys.pl): on another machine the
 * program stops before the first attempt, so every row fails for want of its section rather
 * than pass on whatever call that number is there (the suite also needs x64 to run at all).
 */
export function probeScript<Ctx>(attempts: Array<Attempt<Ctx>>, ctx: Ctx, helperDir: string): string {
  const lines = [
    '#!/bin/sh',
    '# Written by test/proofs/escape-attempts.test.ts: escape attempts, run as the agent.',
    `ASTEST=${helperDir}`,
    'sc() { perl "$ASTEST/sc.pl" "$@"; }',
    'arch=$(uname -m); if [ "$arch" != x86_64 ]; then echo "@@wrong-arch $arch: the attempts use x86_64 system call numbers"; exit 3; fi',
  ];
  for (const a of attempts) {
    if (!/^[a-z0-9-]+$/.test(a.key)) throw new Error(`attempt key ${a.key}`);
    lines.push('t0=$(date +%s%N)', `echo "@@begin ${a.key}"`, '(', a.script(ctx), ') 2>&1 </dev/null', `echo "@@end ${a.key}"`);
    lines.push(`echo "@@took ${a.key} $(( ($(date +%s%N) - t0) / 1000000 )) ms"`);
  }
  lines.push('echo "@@probes-done"', 'exit 0', '');
  return lines.join('\n');
}

/** @@begin/@@end sections of the probe output, by key. */
export function sections(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of stdout.matchAll(/^@@begin ([a-z0-9-]+)\n([\s\S]*?)^@@end \1$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

/** `LABEL errno=N` lines -> N for one label (undefined: the line is missing; -0: it succeeded). */
export function errnoOf(out: string, label: string): number | 'ok' | undefined {
  const m = new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (errno=(\\d+)|ok=-?\\d+|ok)$`, 'm').exec(out);
  if (!m) return undefined;
  return m[2] === undefined ? 'ok' : Number(m[2]);
}

export const errno = { EPERM: 1, ENOENT: 2, ESRCH: 3, EACCES: 13, EINVAL: 22, EROFS: 30, ENOSYS: 38, ENETUNREACH: 101 } as const;

/** Asserts that every label's call failed with one of the allowed errnos (never succeeded). */
export function refused(t: Asserts, out: string, labels: string[], allowed: number[], why: string): void {
  for (const label of labels) {
    const got = errnoOf(out, label);
    t.ok(
      typeof got === 'number' && allowed.includes(got),
      `${label}: ${why} (got ${got === undefined ? 'no answer' : got === 'ok' ? 'success' : `errno ${got}`})`,
    );
  }
}

// The committed profile (tools/sandbox-run/seccomp/agent-sandbox.json) is what derive.mjs makes
// from this machine's podman default, differs from that default only in clone, clone3, setns
// and unshare, and, evaluated rule by rule as a filter would for x86_64, aarch64 and s390x,
// refuses every CLONE_NEW* flag while allowing fork, threads and vfork.
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { repoRoot } from '@agent-sandbox/testkit';
import { deriveProfile, namespaceGaps, profileText, type SeccompProfile, type SeccompRule } from '../dist/index.js';

const dir = path.join(repoRoot, 'tools/sandbox-run/seccomp');
const committedText = readFileSync(path.join(dir, 'agent-sandbox.json'), 'utf8');
const committed: SeccompProfile = JSON.parse(committedText);
const provenance = JSON.parse(readFileSync(path.join(dir, 'provenance.json'), 'utf8'));
const installedPath = '/usr/share/containers/seccomp.json';
const installedText = existsSync(installedPath) ? readFileSync(installedPath, 'utf8') : undefined;
const installedIsTheSource = installedText !== undefined && createHash('sha256').update(installedText).digest('hex') === provenance.sha256;
const rewritten = ['clone', 'clone3', 'setns', 'unshare', 'keyctl'];

const fromThisDefault = {
  skip: installedIsTheSource
    ? false
    : `the installed ${installedPath} is not the default the profile was derived from (${provenance.package}, sha256 ${provenance.sha256}); regenerate with ${provenance.by} only if you mean to follow it`,
};

t.test("the committed profile is exactly what derive.mjs makes from this machine's default", fromThisDefault, async (t) => {
  t.equal(profileText(deriveProfile(JSON.parse(installedText!))), committedText, 'byte for byte');
  const check = await execa(process.execPath, [path.join(dir, 'derive.mjs'), '--check'], { reject: false });
  t.equal(check.exitCode, 0, `derive.mjs --check: ${check.stderr}`);
});

t.test('apart from the four namespace syscalls and keyctl the profile is the default, unchanged', fromThisDefault, async (t) => {
  const base = JSON.parse(installedText!) as SeccompProfile;
  const { syscalls: ours, ...top } = committed;
  const { syscalls: theirs, ...baseTop } = base;
  t.same(top, baseTop, "defaultAction, defaultErrnoRet, archMap: the default's");
  const strip = (rules: SeccompRule[]) =>
    rules.map((r) => ({ ...r, names: r.names.filter((n) => !rewritten.includes(n)) })).filter((r) => r.names.length > 0);
  t.same(strip(ours), strip(theirs), 'every other rule, in order');
  t.ok(
    theirs.some((r) => r.action === 'SCMP_ACT_ALLOW' && r.names.includes('unshare') && !r.args?.length),
    'the default allows unshare unconditionally (what is being closed)',
  );
  t.ok(
    theirs.some((r) => r.action === 'SCMP_ACT_ALLOW' && r.names.includes('keyctl')),
    "and keyctl (the host user's keyrings)",
  );
  t.ok(
    ours.some((r) => r.names.includes('keyctl') && r.action === 'SCMP_ACT_ERRNO' && r.errnoRet === 38),
    'ours answers keyctl with ENOSYS',
  );
  t.notOk(
    ours.some((r) => r.names.includes('keyctl') && r.action === 'SCMP_ACT_ALLOW'),
    'and allows it nowhere',
  );
});

t.test('the profile is self-contained: default action, architectures and every rule in the one file', async (t) => {
  t.equal(committed.defaultAction, 'SCMP_ACT_ERRNO');
  const arches = committed['archMap'] as { architecture: string; subArchitectures: string[] }[];
  t.match(
    arches.find((a) => a.architecture === 'SCMP_ARCH_X86_64'),
    { subArchitectures: ['SCMP_ARCH_X86', 'SCMP_ARCH_X32'] },
    'x86_64 with its i386 and x32 entries',
  );
  t.match(
    arches.find((a) => a.architecture === 'SCMP_ARCH_AARCH64'),
    { subArchitectures: ['SCMP_ARCH_ARM'] },
    'aarch64 with its arm entry',
  );
  t.ok(committed.syscalls.length > 30 && committed.syscalls.some((r) => r.names.includes('read')), 'the whole allow list, not a delta');
});

// ---- the rules evaluated as libseccomp would, for one architecture (podman's Go names) ----
type Verdict = string; // 'allow' or 'errno <n>'
function applies(rule: SeccompRule, arch: string): boolean {
  if (rule.includes?.arches?.length && !rule.includes.arches.includes(arch)) return false;
  if (rule.excludes?.arches?.includes(arch)) return false;
  return true;
}
function matches(rule: SeccompRule, args: number[]): boolean {
  return (rule.args ?? []).every((a) => {
    const v = args[a.index] ?? 0;
    if (a.op === 'SCMP_CMP_MASKED_EQ') return (v & a.value) >>> 0 === a.valueTwo;
    if (a.op === 'SCMP_CMP_EQ') return v === a.value;
    throw new Error(`op ${a.op} not modelled`);
  });
}
function verdict(profile: SeccompProfile, arch: string, syscall: string, args: number[]): Verdict {
  const rules = profile.syscalls.filter((r) => r.names.includes(syscall) && applies(r, arch));
  // A capability-dependent rule would make the answer depend on the plan's capabilities: there is none.
  if (rules.some((r) => r.includes?.caps || r.excludes?.caps)) throw new Error(`${syscall}: a rule depends on capabilities`);
  const hits = new Set(rules.filter((r) => matches(r, args)).map((r) => (r.action === 'SCMP_ACT_ALLOW' ? 'allow' : `errno ${r.errnoRet}`)));
  if (hits.size > 1) throw new Error(`${arch} ${syscall}(${args}): overlapping rules ${[...hits]}`);
  return [...hits][0] ?? `errno ${profile['defaultErrnoRet']}`;
}

const NEW = {
  NEWNS: 0x20000,
  NEWCGROUP: 0x2000000,
  NEWUTS: 0x4000000,
  NEWIPC: 0x8000000,
  NEWUSER: 0x10000000,
  NEWPID: 0x20000000,
  NEWNET: 0x40000000,
};
const SIGCHLD = 17;
const harmless = {
  fork: SIGCHLD,
  'pthread_create (CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID)': 0x3d0f00,
  'posix_spawn (CLONE_VM|CLONE_VFORK|SIGCHLD)': 0x4100 | SIGCHLD,
};
// Where clone(2) reads its flags: x86_64 and aarch64 (and their i386/x32/arm entries) first, s390x second.
const flagIndex: Record<string, number> = { amd64: 0, arm64: 0, s390x: 1 };

for (const arch of Object.keys(flagIndex)) {
  t.test(
    `${arch}: clone and unshare with any CLONE_NEW* flag get EPERM; fork, threads and vfork are allowed; clone3 ENOSYS; setns EPERM`,
    async (t) => {
      const at = (index: number, flags: number) => (index === 0 ? [flags, 0] : [0, flags]);
      let rows = 0;
      for (const [name, bit] of Object.entries({ ...NEW, 'NEWUSER|NEWNS|NEWPID': NEW.NEWUSER | NEW.NEWNS | NEW.NEWPID })) {
        for (const extra of [0, SIGCHLD, harmless['posix_spawn (CLONE_VM|CLONE_VFORK|SIGCHLD)']]) {
          t.equal(
            verdict(committed, arch, 'clone', at(flagIndex[arch]!, bit | extra)),
            'errno 1',
            `clone CLONE_${name} (+0x${extra.toString(16)})`,
          );
          rows += 1;
        }
        t.equal(verdict(committed, arch, 'unshare', [bit]), 'errno 1', `unshare CLONE_${name}`);
        rows += 1;
      }
      t.equal(verdict(committed, arch, 'unshare', [0x80]), 'errno 1', 'unshare CLONE_NEWTIME');
      t.equal(verdict(committed, arch, 'unshare', [0x400 | 0x200]), 'allow', 'unshare CLONE_FILES|CLONE_FS (no namespace)');
      for (const [what, flags] of Object.entries(harmless)) {
        t.equal(verdict(committed, arch, 'clone', at(flagIndex[arch]!, flags)), 'allow', what);
        rows += 1;
      }
      t.equal(verdict(committed, arch, 'clone3', [0, 88]), 'errno 38', 'clone3: ENOSYS (glibc falls back to clone)');
      t.equal(verdict(committed, arch, 'setns', [3, 0]), 'errno 1', 'setns: EPERM');
      t.equal(rows, 8 * 4 + 3, 'every flag row ran');
    },
  );
}

t.test("the preflight's check accepts the committed profile and refuses podman's default and anything weakened", async (t) => {
  t.same(namespaceGaps(committed), [], 'the committed profile has no gap');
  if (installedText !== undefined) t.ok(namespaceGaps(JSON.parse(installedText)).length > 0, "podman's default is refused");
  const dropped = { ...committed, syscalls: committed.syscalls.filter((r) => !r.names.includes('clone3')) };
  t.match(namespaceGaps(dropped), [/missing: agent-sandbox: clone3/], 'a profile without the clone3 rule is refused');
  const widened = { ...committed, syscalls: [...committed.syscalls, { names: ['unshare'], action: 'SCMP_ACT_ALLOW', args: [] }] };
  t.match(namespaceGaps(widened), [/another rule \(SCMP_ACT_ALLOW\) names unshare/], 'an extra allow for unshare is refused');
  t.match(namespaceGaps({ hello: 'world' }), [/not a seccomp profile/]);
  t.match(namespaceGaps(null), [/not a seccomp profile/]);
});

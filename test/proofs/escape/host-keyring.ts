// The host user's (uid 1000) kernel keyring, from the host side: a key the test puts there for
// the session to aim at, read back after the session, and removed at teardown. Kernel keys are
// per uid, not per container: rootful podman without a user namespace runs the agent as the
// host's uid 1000 itself. Done with keyctl(2)/add_key(2) through perl (there is no keyctl binary).
import { execa } from 'execa';
import { agentUid } from './session-kit.js';

const asHostUser = ['--reuid', String(agentUid), '--regid', String(agentUid), '--clear-groups', '--'];

async function perlAsHostUser(program: string, args: string[]): Promise<string> {
  const out = await execa('setpriv', [...asHostUser, 'perl', '-e', program, '--', ...args], { reject: false, timeout: 30_000 });
  if (out.exitCode !== 0) throw new Error(`perl as uid ${agentUid} exited ${out.exitCode}: ${out.stderr}`);
  return String(out.stdout);
}

/** add_key("user", description, value) into @u, readable by its user (perm 0x3f3f0000). */
export async function addHostKey(description: string, value: string): Promise<void> {
  const program = String.raw`my ($d, $v) = @ARGV; my $t = "user";
my $id = syscall(248, $t, $d, $v, length $v, -4); die "add_key: $!\n" if $id < 0;
syscall(250, 5, $id, 0x3f3f0000) == 0 or die "setperm: $!\n"; print "$id\n";`;
  await perlAsHostUser(program, [description, value]);
}

/** The key's value (undefined when gone) and the keyrings `<description>-planted` linked into @u. */
export async function readHostKey(description: string): Promise<{ value: string | undefined; planted: string[] }> {
  const program = String.raw`my ($d) = @ARGV; my ($t, $k, $p) = ("user", "keyring", "$d-planted");
my $id = syscall(250, 10, -4, $t, $d, 0);
if ($id > 0) { my $b = "\0" x 256; my $n = syscall(250, 11, $id, $b, 256); print "value=" . substr($b, 0, $n) . "\n" if $n >= 0 }
my $pl = syscall(250, 10, -4, $k, $p, 0); print "planted=$p\n" if $pl > 0;`;
  const out = await perlAsHostUser(program, [description]);
  return {
    value: /^value=(.*)$/m.exec(out)?.[1],
    planted: [...out.matchAll(/^planted=(.*)$/gm)].map((m) => m[1]!),
  };
}

/** Unlinks the key and any planted keyring from @u (teardown; also after a run that was killed). */
export async function removeHostKey(description: string): Promise<void> {
  const program = String.raw`my ($d) = @ARGV; my ($t, $k, $p) = ("user", "keyring", "$d-planted");
for my $pair ([$t, $d], [$k, $p]) { my ($ty, $de) = @$pair; for (1 .. 5) { my $id = syscall(250, 10, -4, $ty, $de, 0); last if $id < 0; syscall(250, 9, $id, -4) } }`;
  await perlAsHostUser(program, [description]);
}

/** Keys a killed run left in the host user's keyring (their descriptions start with `prefix`). */
export async function removeStaleHostKeys(prefix: string): Promise<void> {
  const out = await execa('setpriv', [...asHostUser, 'cat', '/proc/keys'], { reject: false });
  const names = new Set([...String(out.stdout).matchAll(/ user +(\S+): \d+$/gm)].map((m) => m[1]!).filter((d) => d.startsWith(prefix)));
  for (const name of names) await removeHostKey(name);
}

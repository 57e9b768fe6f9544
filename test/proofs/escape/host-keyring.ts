// The host user's (uid 1000) kernel keyring, from the host side: a key the test puts there for
// the session to aim at, read back after the session, and removed at teardown. Kernel keys are
// per uid, not per container: rootful podman without a user namespace runs the agent as the
// host's uid 1000 itself, and a rootless launcher's agent is its user (keep-id). Done with
// keyctl(2)/add_key(2) through perl (there is no keyctl binary). The host side lists @u's
// links and describes each (a user's own view and read rights) rather than searching: a
// keyring linked in from inside need not grant its user the search right. Each perl first
// joins a session keyring of its own and links @u into it, as a login's pam_keyinit does: the
// session keyring setpriv leaves it is its parent's (under systemd a service's private one,
// root's), through which uid 1000 would not possess @u nor the key it adds, and a user key's
// owner may change its permissions only as its possessor.
import { execa } from 'execa';
import { agentUid, patience, rootful } from './session-kit.js';

const asHostUser = ['--reuid', String(agentUid), '--regid', String(agentUid), '--clear-groups', '--'];

/** Perl that prints "serial type description" for every link in @u (keyctl READ, DESCRIBE). */
const listLinks = String.raw`syscall(250, 1, 0) >= 0 or die "join_session_keyring: $!\n"; syscall(250, 8, -4, -3) == 0 or die "link \@u into \@s: $!\n";
sub links { my $b = "\0" x 4096; my $n = syscall(250, 11, -4, $b, 4096); return () if $n <= 0;
  return map { my $d = "\0" x 512; my $m = syscall(250, 6, $_, $d, 512); my @f = $m > 0 ? split(/;/, substr($d, 0, $m - 1), 5) : ();
    @f ? [$_, $f[0], $f[4]] : () } unpack("l*", substr($b, 0, $n)); }`;

async function perlAsHostUser(program: string, args: string[]): Promise<string> {
  // Rootless, the launcher's user is the agent's: its own keyring, no setpriv (nor the right to clear groups).
  const [cmd, ...argv] = [...(rootful ? ['setpriv', ...asHostUser] : []), 'perl', '-e', `${listLinks}\n${program}`, '--', ...args];
  const out = await execa(cmd!, argv, { reject: false, timeout: 30_000 * patience });
  if (out.exitCode !== 0) throw new Error(`perl as uid ${agentUid} exited ${out.exitCode}: ${out.stderr}`);
  return String(out.stdout);
}

/** add_key("user", description, value) into @u, readable and searchable by its user (perm 0x3f3f0000). */
export async function addHostKey(description: string, value: string): Promise<void> {
  const program = String.raw`my ($d, $v) = @ARGV; my $t = "user";
my $id = syscall(248, $t, $d, $v, length $v, -4); die "add_key: $!\n" if $id < 0;
syscall(250, 5, $id, 0x3f3f0000) == 0 or die "setperm: $!\n"; print "$id\n";`;
  await perlAsHostUser(program, [description, value]);
}

/** The key's value (undefined when gone) and the keyrings `<description>-planted` linked into @u. */
export async function readHostKey(description: string): Promise<{ value: string | undefined; planted: string[] }> {
  const program = String.raw`my ($d) = @ARGV;
for my $l (links()) { my ($id, $type, $desc) = @$l;
  if ($type eq "user" && $desc eq $d) { my $b = "\0" x 256; my $n = syscall(250, 11, $id, $b, 256); print "value=" . substr($b, 0, $n) . "\n" if $n >= 0 }
  print "planted=$desc\n" if $type eq "keyring" && $desc eq "$d-planted" }`;
  const out = await perlAsHostUser(program, [description]);
  return {
    value: /^value=(.*)$/m.exec(out)?.[1],
    planted: [...out.matchAll(/^planted=(.*)$/gm)].map((m) => m[1]!),
  };
}

/** The descriptions of the keys and keyrings in @u that start with `prefix`. */
export async function listHostKeys(prefix: string): Promise<string[]> {
  const program = String.raw`my ($p) = @ARGV;
for my $l (links()) { my ($id, $type, $desc) = @$l; print "$desc
" if index($desc, $p) == 0 }`;
  return (await perlAsHostUser(program, [prefix])).split('\n').filter(Boolean);
}

/** Unlinks from @u every key or keyring whose description starts with `prefix` (teardown, and what a killed run left). */
export async function removeHostKeys(prefix: string): Promise<void> {
  const program = String.raw`my ($p) = @ARGV;
for my $l (links()) { my ($id, $type, $desc) = @$l; syscall(250, 9, $id, -4) if index($desc, $p) == 0 }`;
  await perlAsHostUser(program, [prefix]);
}

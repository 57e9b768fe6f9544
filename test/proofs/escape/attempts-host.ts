// Attempts on what lies outside the container: host processes, privilege, the podman socket,
// the other session running beside this one, the host's files and the credential source.
// Each is also checked from the host where the attempt would leave a trace there.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { plantEuidOnHost } from './host-controls.js';
import type { ProbeCtx } from './probe-context.js';
import { errno, refused, type Attempt } from './probe-script.js';

const { ESRCH } = errno;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function victimPaths(c: ProbeCtx): string[] {
  return [
    c.victim.ws.path,
    c.victim.ws.home,
    c.victim.secretsDir,
    path.dirname(c.victim.ws.path),
    path.dirname(path.dirname(c.victim.ws.path)),
  ];
}

export const hostAttempts: Array<Attempt<ProbeCtx>> = [
  {
    key: 'pid-namespace',
    claim: "the host's processes are not in the session's pid namespace: a host sleep is not listed and PID 1 is the container's tini",
    peer: 'sandbox-runtime "should isolate PID namespace - sandboxed processes cannot see host PIDs"',
    script: (c) => String.raw`echo "pids=$(ls /proc | grep -cE '^[0-9]+$')"
echo "pid1=$(cat /proc/1/comm)"
if [ -e /proc/${c.hostPid} ]; then echo "host-pid present $(tr '\0' ' ' < /proc/${c.hostPid}/cmdline)"; else echo "host-pid absent"; fi
echo "marked=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' | grep -c "${c.hostMarker.slice(0, -1)}[${c.hostMarker.slice(-1)}]")"`,
    check: (t, out) => {
      const pids = Number(/^pids=(\d+)$/m.exec(out)?.[1]);
      t.ok(pids > 0 && pids < 30, `only the session's own few processes are listed (${pids})`);
      t.match(out, /^pid1=tini$/m, 'PID 1 is tini');
      t.match(out, /^host-pid absent$/m, "the host sleep's pid number is not in this namespace");
      t.match(out, /^marked=0$/m, "no listed process carries the host sleep's marker");
    },
  },
  {
    key: 'ptrace',
    claim: "ptrace (attach and seize) of a host process's or the other session's pid number fails with ESRCH",
    script: (c) => String.raw`sc attach-host-sleep 101 i:16 i:${c.hostPid} i:0 i:0
sc seize-host-sleep 101 i:0x4206 i:${c.hostPid} i:0 i:0
sc attach-other-session 101 i:16 i:${c.victim.agentHostPid} i:0 i:0
sc kill-0-host-sleep 62 i:${c.hostPid} i:0`,
    check: (t, out, c) => {
      refused(
        t,
        out,
        ['attach-host-sleep', 'seize-host-sleep', 'attach-other-session', 'kill-0-host-sleep'],
        [ESRCH],
        'no such process in this namespace',
      );
      t.ok(alive(c.hostPid), 'the host sleep is alive');
      t.equal(readFileSync(`/proc/${c.hostPid}/status`, 'utf8').match(/^TracerPid:\s+(\d+)$/m)?.[1], '0', 'and nothing traces it');
    },
  },
  {
    key: 'setuid',
    claim:
      'no setuid binary gains anything: NoNewPrivs is 1 and every capability set is 0; su and mount fail, sudo is absent, and a root-owned setuid binary planted in the workspace (a mount without nosuid) runs as uid 1000, while on the host the same file run by uid 1000 runs as root',
    peer: 'codex linux-sandbox test_no_new_privs_is_enabled, sandboxed_command_has_no_effective_or_permitted_capabilities; sandbox-runtime "should prevent privilege escalation attempts"',
    rootOnly:
      'rootless launcher: the setuid-root plant and its control need root (a root-owned setuid file, run on the host by uid 1000 to gain euid 0)',
    script: (c) => String.raw`grep -E '^(NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb)):' /proc/self/status
echo "setuid-binaries=$(find / -xdev -perm -4000 -type f 2>/dev/null | wc -l)"
su -c id root < /dev/null; echo "su=$?"
mount -t tmpfs none /tmp; echo "mount=$?"
if command -v sudo > /dev/null; then echo "sudo present"; else echo "sudo absent"; fi
echo "plant=$(stat -c '%u %a' ${c.setuidPlant.inside}) mount=$(awk '$5 == "${c.ws.inside}" {print $6}' /proc/self/mountinfo)"
${c.setuidPlant.inside} -e 'print "suid-plant euid=$> uid=$<\n"'`,
    check: async (t, out, c) => {
      t.match(out, /^NoNewPrivs:\s+1$/m, 'NoNewPrivs is 1');
      for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'])
        t.match(out, new RegExp(`^${set}:\\s+0{16}$`, 'm'), `${set} is 0`);
      t.ok(Number(/^setuid-binaries=(\d+)$/m.exec(out)?.[1]) > 0, 'the image does have setuid-root binaries to try');
      t.match(out, /^su=1$/m, 'su fails');
      t.match(out, /must be superuser/, 'setuid-root mount runs without root: "must be superuser"');
      t.match(out, /^mount=32$/m, 'mount fails');
      t.match(out, /^sudo absent$/m, 'there is no sudo');
      t.match(out, /^plant=0 4755 mount=rw,(?!.*nosuid)/m, 'inside, the plant is root-owned and setuid, on a mount that honours setuid');
      t.equal(
        await plantEuidOnHost(c.setuidPlant.host),
        'euid=0 uid=1000',
        'control: on the host, uid 1000 running the plant (no NoNewPrivs) gets euid 0',
      );
      t.match(out, /^suid-plant euid=1000 uid=1000$/m, 'inside, the same plant runs as uid 1000: no privilege gained');
    },
  },
  {
    key: 'podman-socket',
    claim: "no container runtime socket or binary is reachable: podman's and docker's sockets are absent and connecting to them fails",
    script:
      () => String.raw`for p in /run/podman/podman.sock /var/run/podman/podman.sock /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock /run/user/1000/podman/podman.sock /run/crio/crio.sock; do
  if [ -e "$p" ]; then echo "present $p"; else echo "absent $p"; fi
done
for b in podman docker runc crun conmon nsenter-host; do command -v $b; done; echo "binaries-listed"
node "$ASTEST/net-probe.js" unix:/run/podman/podman.sock unix:/var/run/docker.sock`,
    check: (t, out) => {
      for (const p of [
        '/run/podman/podman.sock',
        '/var/run/podman/podman.sock',
        '/var/run/docker.sock',
        '/run/docker.sock',
        '/run/containerd/containerd.sock',
        '/run/user/1000/podman/podman.sock',
      ]) {
        t.match(out, new RegExp(`^absent ${p}$`, 'm'), `${p} is absent`);
      }
      t.match(out, /^binaries-listed$/m);
      t.notMatch(out.split('binaries-listed')[0] ?? '', /^\//m, 'no podman, docker, runc, crun or conmon binary');
      t.match(out, /^unix:\/run\/podman\/podman.sock ENOENT$/m, 'connecting to the podman socket fails');
      t.match(out, /^unix:\/var\/run\/docker.sock ENOENT$/m, 'connecting to the docker socket fails');
    },
  },
  {
    key: 'other-session',
    claim:
      'another session running beside this one in the same root is out of reach: its workspace, home and staged credential are at no path, no file holds its canary, and its files are unchanged',
    script: (c) =>
      [
        "echo \"workspaces=$(ls -A /sandbox/workspaces | tr '\\n' ' ')\"",
        ...victimPaths(c).map((p) => `if [ -e ${p} ]; then echo "present ${p}"; else echo "absent ${p}"; fi`),
        `(echo planted > ${c.victim.ws.path}/planted) 2>&1; echo "write-other=$?"`,
        `for r in /proc/[0-9]*/root; do [ -e "$r${c.victim.ws.path}" ] && echo "via $r"; done; echo "roots-checked"`,
        // Every file on every mount but the image's own read-only root (built before any session).
        // grep -D skip: rootless, the host's device nodes are bound over files that find's -type f
        // takes for regular ones (readdir's type), and grep would read /dev/urandom without end.
        `search() { awk '$5 != "/" && $5 !~ "^/(proc|sys)(/|$)" {print $5}' /proc/self/mountinfo | while read -r m; do find "$m" -xdev -type f -exec grep -D skip -l "$1" {} + 2>/dev/null; done; }`,
        // control: the same search finds a file inside that holds a marker
        `head=${c.victim.canary.slice(0, -1)}; echo "\${head}${c.victim.canary.slice(-1)}-control" > /tmp/astest-control; search "${c.victim.canary.slice(0, -1)}[${c.victim.canary.slice(-1)}]-control" | sed 's/^/control-in /'; rm -f /tmp/astest-control`,
        // [x]: the pattern does not match this script's own text
        `search "${c.victim.canary.slice(0, -1)}[${c.victim.canary.slice(-1)}]" | sed 's/^/canary-in /'; echo "searched"`,
      ].join('\n'),
    check: (t, out, c) => {
      t.match(out, new RegExp(`^workspaces=${c.ws.id} $`, 'm'), 'only its own workspace is under /sandbox/workspaces');
      for (const p of victimPaths(c))
        t.match(out, new RegExp(`^absent ${p}$`, 'm'), `${p} (the other session's, or the root above it) is not there`);
      t.match(out, /^write-other=[1-9]/m, "writing at the other session's host path fails");
      t.match(out, /^roots-checked$/m);
      t.notMatch(out, /^via /m, 'no /proc/<pid>/root leads there');
      t.match(out, /^searched$/m);
      t.match(out, /^control-in \/tmp\/astest-control$/m, 'control: the search finds a marked file inside');
      t.notMatch(out, /^canary-in /m, "no file inside holds the other session's canary");
      t.ok(c.victim.files.size >= 2, 'control: the other session has canary files in its workspace and its home');
      for (const [file, [content, mtimeMs]] of c.victim.files) {
        t.equal(readFileSync(file, 'utf8'), content, `the other session's ${file} is byte-identical`);
        t.equal(statSync(file).mtimeMs, mtimeMs, 'and its mtime is unchanged');
      }
      t.notOk(existsSync(path.join(c.victim.ws.path, 'planted')), 'nothing was planted in it');
    },
  },
  {
    key: 'host-files',
    claim:
      "the host's root file system is out of reach: a file in the host's / (rootless: in the user's /tmp) is absent at its path, under /proc/1/root and every /proc/<pid>/root, and /etc/shadow is the image's own, unreadable",
    script: (c) => String.raw`f=${c.hostCanary}
for p in $f /proc/1/root$f /proc/self/root$f; do if [ -e "$p" ]; then echo "present $p"; else echo "absent $p"; fi; done
for r in /proc/[0-9]*/root; do [ -e "$r$f" ] && echo "via $r"; done; echo "roots-checked"
echo "root-link=$(readlink /proc/1/root)"
cat /etc/shadow > /dev/null; echo "shadow=$?"
grep -c ' /etc/shadow ' /proc/self/mountinfo
echo "root-fs=$(awk '$5 == "/" {print $9}' /proc/self/mountinfo)"`,
    check: (t, out, c) => {
      const f = c.hostCanary;
      for (const p of [f, `/proc/1/root${f}`, `/proc/self/root${f}`]) t.match(out, new RegExp(`^absent ${p}$`, 'm'), `${p} is not there`);
      t.match(out, /^roots-checked$/m);
      t.notMatch(out, /^via /m, 'no /proc/<pid>/root leads to the host root');
      t.match(out, /^root-link=\/$/m, "PID 1's root is the container's /");
      t.match(out, /Permission denied/, '/etc/shadow: EACCES');
      t.match(out, /^shadow=1$/m, 'it cannot be read');
      t.match(out, /^0$/m, 'no host file is mounted over /etc/shadow');
      t.match(out, /^root-fs=overlay$/m, "/ is the image's overlay");
      t.ok(existsSync(c.hostCanary), 'control: the canary does exist on the host');
    },
  },
  {
    key: 'credential',
    claim:
      "the credential source is out of reach: the host's credential file is not mounted, the staged copy is read-only, and rewriting the installed copy leaves the host file byte-identical with its mtime",
    script: (c) => String.raw`if [ -e ${c.credential.path} ]; then echo "host-path present"; else echo "host-path absent"; fi
for op in append truncate remove chmod rename; do
  case $op in
    append) (echo refreshed >> /sandbox-secrets/codex/auth.json) 2>&1 ;;
    truncate) (: > /sandbox-secrets/codex/auth.json) 2>&1 ;;
    remove) rm -f /sandbox-secrets/codex/auth.json 2>&1 ;;
    chmod) chmod 666 /sandbox-secrets/codex/auth.json 2>&1 ;;
    rename) mv /sandbox-secrets/codex/auth.json /sandbox-secrets/codex/moved 2>&1 ;;
  esac
  echo "staged-$op=$?"
done
grep -q "${c.credential.canary}" /sandbox/home/.codex/auth.json && echo "installed copy holds the canary"
echo '{"OPENAI_API_KEY":"sk-rewritten-inside"}' > /sandbox/home/.codex/auth.json; echo "installed-rewrite=$?"`,
    check: (t, out, c) => {
      t.match(out, /^host-path absent$/m, "the host credential's path does not exist inside");
      for (const op of ['append', 'truncate', 'remove', 'chmod', 'rename'])
        t.match(out, new RegExp(`^staged-${op}=[1-9]`, 'm'), `the staged copy refuses ${op}`);
      t.match(out, /Read-only file system/, 'the refusal is the read-only mount');
      t.match(out, /^installed copy holds the canary$/m, 'control: the installed copy is the staged credential');
      t.match(out, /^installed-rewrite=0$/m, 'the agent can rewrite its installed copy');
      t.same(readFileSync(c.credential.path), c.credential.bytes, 'the host credential is byte-identical');
      t.equal(statSync(c.credential.path).mtimeMs, c.credential.mtimeMs, 'with its mtime unchanged');
      t.notOk(existsSync(path.join(c.ws.home, '.codex', 'auth.json')), 'the installed copy is removed from the session home');
    },
  },
];

/** Last: kill -9 of every pid number. Nothing after it in the probe session. */
export const signalAttempt: Attempt<ProbeCtx> = {
  key: 'kill-all',
  claim: 'kill -9 of every pid number up to pid_max reaches no host process: a host sleep and the other session beside it survive',
  peer: 'sandbox-runtime "should isolate PID namespace"',
  script: (c) => `perl "$ASTEST/kill-all.pl" ${c.hostPid} ${c.victim.agentHostPid}`,
  check: (t, out, c) => {
    t.match(out, new RegExp(`^host-pid ${c.hostPid} errno=${ESRCH}$`, 'm'), "the host sleep's pid number: ESRCH");
    t.match(
      out,
      new RegExp(`^host-pid ${c.victim.agentHostPid} errno=${ESRCH}$`, 'm'),
      "the other session's agent's host pid number: ESRCH",
    );
    t.match(out, /^pid_max=\d+ spared=[\d,]+ signalled=\d+ pids=/m, 'every pid number but its own line of ancestors was tried');
    t.ok(alive(c.hostPid), 'the host sleep is alive');
    t.equal(c.victimOutcome?.exitCode, 0, 'the other session ran to its own end (exit 0)');
    t.match(c.victimOutcome?.stdout ?? '', /^victim released$/m, 'its agent was still there to see its release');
  },
};

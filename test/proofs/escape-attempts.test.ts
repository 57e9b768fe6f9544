// Escape attempts from inside real sessions started through the launcher (`agent-sandbox run`),
// made as the agent would make them, each a test titled with its claim (issue 14, item 5).
// The sessions run concurrently and each test awaits its own: one probe session makes most
// attempts (network, mounts, namespaces, kernel interfaces, host processes, privilege, the
// podman socket, the host's files, the credential source) while another session runs beside
// it in the same root as its target; one session per git-to-host path, in a linked worktree
// and in a plain repository, after which the host user runs git; and sessions for the launcher's
// own ceilings (kill -9, --timeout, --disk, --pids), and floods of what crosses back to the host
// (files, the broker: issue 24). Where an attempt would change the host, the host is checked
// too. Peers with the same claim are named in the title.
import t from 'tap';
import { needs } from '@agent-sandbox/testkit';
import { hostAttempts, signalAttempt } from './escape/attempts-host.js';
import { kernelAttempts } from './escape/attempts-kernel.js';
import { mountAttempts, networkAttempts } from './escape/attempts-network-mounts.js';
import { namespaceAttempts } from './escape/attempts-namespaces.js';
import { cgroupKeyAttempts } from './escape/attempts-cgroup-keys.js';
import { gitPaths, gitPeers } from './escape/git-attacks.js';
import { sections, titleOf, type Asserts } from './escape/probe-script.js';
import { hostTargets } from './escape/host-targets.js';
import { gitKinds, startAll } from './escape/runs.js';
import { patience, rootful, settle, type Settled } from './escape/session-kit.js';
import { floodRows } from './escape/flood-rows.js';
import { gitStoreRows, plantedRows } from './escape/seam-rows.js';
import { userToolsControls, userToolsSession } from './escape/user-tools.js';
import { userToolsRows } from './escape/user-tools-rows.js';

// Root runs rootful sessions: the host user is simulated with setpriv, the workspaces are
// handed to uid 1000, a setuid-root plant and a canary in the host's / are made. Any other user
// (uid 1000 in the VM tier's guest) runs the launcher rootless (its podman, a user namespace
// with keep-id, its delegated cgroup, the broker as itself): the rows whose plant or control
// needs root skip there with their reason (`rootOnly`, allowed on the vm-user tier alone). x64:
// the attempts name system calls by their x86_64 numbers (and the probe stops on another
// machine). Either cgroup version: the cgroup files are read where the kernel puts them on each
// (cgroup-view.ts, /proc/PID/cgroup), so the suite runs on this host (v1 hybrid) and in the
// guest (systemd, cgroup v2).
const req = needs({
  arch: 'x64',
  podman: true,
  images: ['localhost/agent-sandbox-agents:latest'],
  commands: ['setpriv', 'unshare', 'perl', 'git', 'du'],
});
const suiteStart = Date.now();
// The VM tier's guest (vm/guest/run-in-guest.sh sets AGENT_SANDBOX_TIER=vm) runs the rows whose
// claims rest on what differs there: the probe session's attempts (crun and cgroup v2, not runc
// and v1; rootless: a user namespace) and the session's ends and ceilings (a systemd slice for
// its parent, cgroup.kill, the v2 pids controller; rootless: the user's delegated cgroup). The
// rest is git, the launcher's clean-up, its terminal output and its broker, the same code on
// either cgroup version and runtime, proved as root on the host tier: under CPU emulation each
// session costs minutes. Rootless, those rows' host side (git as the host user through setpriv)
// is root's, and they are not run.
const inGuest = process.env['AGENT_SANDBOX_TIER'] === 'vm';
const hostTierSkip = !rootful
  ? 'rootless launcher: the git, git store, planted-link, naming, user-tools and flood rows are run as root only (the host tier proves them; their host side runs git as uid 1000 through setpriv)'
  : inGuest
    ? "proved on the host tier; the same code path (git, the launcher's clean-up, its terminal output and broker, as root on either cgroup version and runtime)"
    : false;
const hostTier = req.skip || !hostTierSkip ? req : { skip: hostTierSkip };
/** A probe row's options: its own reason where it needs a root launcher and this one is rootless. */
const rowReq = (a: { rootOnly?: string }) => (!req.skip && a.rootOnly && !rootful ? { skip: a.rootOnly } : req);
const attempts = [
  ...networkAttempts,
  ...mountAttempts,
  ...namespaceAttempts,
  ...kernelAttempts,
  ...cgroupKeyAttempts,
  ...hostAttempts,
  signalAttempt,
];
// Started only where the suite can run; the tests below are skipped, with the reason, elsewhere.
const runs = req.skip ? undefined : startAll(t, await hostTargets(t), attempts, { hostTierRows: !hostTier.skip });
// What the user's own tools meet in the workspace afterwards (issue 32): host-side code, as the git rows.
const userTools = hostTier.skip ? undefined : { session: settle(userToolsSession(t)), controls: settle(userToolsControls(t)) };

function unwrap<T>(tt: Asserts, s: Settled<T>): T | undefined {
  tt.ok(s.ok, s.ok ? 'the session ran' : `the session could not be run: ${s.error}`);
  return s.ok ? s.value : undefined;
}

// ---- the tests ----
let checked = 0;
for (const a of attempts) {
  t.test(titleOf(a), rowReq(a), async (tt) => {
    const p = unwrap(tt, await runs!.probed);
    if (!p) return;
    const out = sections(p.stdout).get(a.key);
    tt.ok(out !== undefined, `the attempt ran and reported (probe session exit ${p.exitCode}; stderr tail: ${p.stderr.slice(-300)})`);
    if (out === undefined) return;
    await a.check(tt, out, p.ctx);
    checked += 1;
  });
}
t.test('the probe session ran every attempt to its end, and the table was checked row by row', req, async (tt) => {
  const p = unwrap(tt, await runs!.probed);
  tt.equal(p?.exitCode, 0, 'the probe session exits 0');
  tt.match(p?.stdout ?? '', /^@@probes-done$/m, 'its last line was reached');
  tt.equal(sections(p?.stdout ?? '').size, attempts.length, `all ${attempts.length} sections are there`);
  const rows = attempts.filter((a) => !rowReq(a).skip).length;
  tt.equal(checked, rows, `every row was checked (${rows} of ${attempts.length}; the rest need a root launcher)`);
  tt.ok(attempts.length >= 30, `${attempts.length} attempts in the probe session`);
  const slow = [...(p?.stdout ?? '').matchAll(/^@@took (\S+) (\d+) ms$/gm)]
    .filter((m) => Number(m[2]) >= 500)
    .map((m) => `${m[1]} ${m[2]} ms`);
  tt.comment(`probe session ${p?.ms} ms; attempts over 0.5 s: ${slow.join(', ') || 'none'}`);
});

for (const kind of gitKinds) {
  for (const { path: p, what } of gitPaths) {
    t.test(
      `${kind}: ${what} runs nothing on the host in the host user's git status, commit, checkout or merge [peer: ${gitPeers}]`,
      hostTier,
      async (tt) => {
        const run = unwrap(tt, await runs!.git.get(`${kind}/${p}`)!);
        if (!run) return;
        tt.equal(run.end.exitCode, 0, `the planting session ran (stderr tail: ${run.end.stderr.slice(-300)})`);
        tt.match(run.end.stdout, /^agent-commit=0$/m, 'the agent committed inside');
        tt.same(run.host.markers, [], 'no planted command ran on the host');
        tt.same(run.host.failures, [], "the host user's git commands all succeed");
        tt.ok(run.host.agentCommitOnBranch, "the agent's own commit is on its branch in the host repository");
      },
    );
  }
}

gitStoreRows(t, hostTier, runs, unwrap);
plantedRows(t, hostTier, runs, unwrap);
userToolsRows(t, hostTier, userTools, unwrap);

t.test(
  'kill -9 of the launcher: the container is gone within 5 s, one "abandoned" line, nothing of the session left (credential copies, record, cidfile, parent cgroup, podman scratch directories) [peer: sandbox-runtime "should kill child processes when sandbox is terminated via SIGTERM (--die-with-parent)"]',
  req,
  async (tt) => {
    const k = unwrap(tt, await runs!.killedAlone);
    if (!k) return;
    // 5 s on the host tier. In the guest (patience 10, qemu without KVM) podman's own removal of a like container,
    // begun at the kill beside it, is added. Measured there with the sentinel's bundle, in CI: 35.5 s against a
    // bound of 64.0 s as root, 48.2 s against 73.4 s as uid 1000 (vm/suite.mjs prints each run's figures).
    const podmanShare = patience > 1 ? k.podmanRemoveMs : 0;
    // Measured only where it is added to the bound (the host tier does not start the like container).
    if (patience > 1) tt.ok(podmanShare !== undefined, `control: podman's own rm --force of a like container took ${k.podmanRemoveMs} ms`);
    const bound = 5000 * patience + (podmanShare ?? 0);
    tt.ok(
      k.goneAfterMs !== undefined && k.goneAfterMs <= bound,
      `the container is gone ${k.goneAfterMs} ms after the SIGKILL (bound ${bound} ms${patience > 1 ? `: 5 s x ${patience}, plus podman's own removal` : ''})`,
    );
    tt.equal(k.abandoned.length, 1, 'the ledger has the session\'s line with reason "abandoned"');
    tt.equal(k.nextStart?.exitCode, 0, 'the next launcher start (plan) runs');
    tt.equal(k.linesAfterNextStart.length, 1, 'and writes no second line for it');
    tt.notOk(k.stagedLeft, 'the staged credential copy is removed');
    tt.notOk(k.installedLeft, 'the installed copy is removed from the session home');
    tt.same(k.leftovers, [], 'no session record, cidfile, parent cgroup or podman scratch directory is left');
  },
);

t.test(
  'kill -9 of the launcher and its sentinel: the next launcher start removes the container and all the session left, and writes the "abandoned" line',
  req,
  async (tt) => {
    const k = unwrap(tt, await runs!.killedWithSentinel);
    if (!k) return;
    tt.ok(k.stillRunningBeforeSweep, 'control: with its sentinel dead too, the container was still running');
    tt.equal(k.nextStart?.exitCode, 0, 'the next launcher start (plan) runs');
    tt.ok(k.goneAfterMs !== undefined, 'the container is gone when it returns');
    tt.equal(k.abandoned.length, 1, 'one line with reason "abandoned"');
    tt.equal(k.abandoned[0]?.['evidence']?.['cause'], 'the next launcher start', 'written by the next launcher start');
    tt.notOk(k.stagedLeft, 'the staged credential copy is removed');
    tt.notOk(k.installedLeft, 'the installed copy is removed from the session home');
    tt.same(k.leftovers, [], 'no session record, cidfile, parent cgroup or podman scratch directory is left');
  },
);

t.test(
  '--timeout 5s ends an agent that sleeps for ten minutes, reason "timeout" [peer: codex linux-sandbox test_timeout; sandbox-runtime "should not leave orphan processes after timeout kills sandbox"]',
  req,
  async (tt) => {
    const o = unwrap(tt, await runs!.timedOut);
    if (!o) return;
    // Far below the agent's own ten minutes; the margin is for a loaded machine (start-up included).
    tt.ok(o.end.ms >= 5000 && o.end.ms < 120_000 * patience, `the launcher returned after ${o.end.ms} ms (bound ${120_000 * patience} ms)`);
    tt.equal(o.line?.['reason'], 'timeout', 'the ledger says timeout');
    tt.notOk(o.containerLeft, 'no container is left');
  },
);

t.test('a writer with no end under --disk 256m is stopped: reason "disk-limit", and the host keeps its free space', req, async (tt) => {
  const o = unwrap(tt, await runs!.diskFilled);
  if (!o) return;
  const overshoot = 512 * 2 ** 20;
  tt.equal(o.line?.['reason'], 'disk-limit', 'the ledger says disk-limit');
  const written = o.line?.['evidence']?.['disk']?.['writtenBytes'] as number;
  tt.ok(written > o.limit && written <= o.limit + overshoot, `it wrote ${written} bytes: over 256m, within 512m of it`);
  // The session can write only to its workspace and home (/ is read-only, /tmp is memory): what
  // they hold is what it took from the host's disk. (The file system's free space is shared with
  // everything else running here, so its change is printed, not compared.)
  tt.ok(
    o.left <= o.limit + overshoot,
    `the session's directories hold ${o.left} bytes: the host keeps its free space but for the ceiling and the overshoot`,
  );
  tt.ok(
    o.freeAfter > o.limit,
    `the file system still has room (${o.freeAfter} bytes free; ${o.freeBefore - o.freeAfter} fewer than before, other writers included)`,
  );
  tt.notOk(o.containerLeft, 'no container is left');
});

t.test(
  "a fork bomb is held at --pids 64 while the host keeps forking: inside, every fork past 64 fails with EAGAIN, and the ledger's peak counts the container's tasks, not conmon, which podman moves into the session's cgroup",
  req,
  async (tt) => {
    const o = unwrap(tt, await runs!.bombed);
    if (!o) return;
    tt.ok(o.bombing, 'the bomb started');
    tt.equal(o.end.exitCode, 0, `the agent ended by itself (stderr tail: ${o.end.stderr.slice(-200)})`);
    const m = /^bomb peak=(\d+) max=(\d+) events=max (\d+)$/m.exec(o.end.stdout);
    tt.ok(m, `the bomb reported its counters: ${o.end.stdout.trim()}`);
    tt.ok(Number(m?.[1]) <= 64 && Number(m?.[1]) >= 60, `inside, pids.current peaked at ${m?.[1]} of 64`);
    tt.equal(m?.[2], '64', 'pids.max is 64');
    tt.ok(Number(m?.[3]) > 0, `forks were refused (${m?.[3]})`);
    // The kernel's own words: the pids controller limits fork and clone, and refuses them with
    // EAGAIN; a process moved in is never refused, so only a fork is what the limit is about.
    const k = /^kernel peak=(\S+) failed=(\S*) eagain=(\d+)$/m.exec(o.end.stdout);
    tt.ok(k, "the bomb reported the kernel's peak and its failed forks by errno");
    const failed = (k?.[2] ?? '')
      .split(',')
      .filter(Boolean)
      .map((e) => e.split(':'));
    tt.ok(
      failed.length > 0 && failed.every(([errno]) => errno === k?.[3]),
      `every failed fork failed with EAGAIN (${k?.[2]}; EAGAIN is ${k?.[3]})`,
    );
    if (k?.[1] !== '?') tt.ok(Number(k?.[1]) <= 64, `the kernel's own pids.peak of the container's cgroup is ${k?.[1]}: no fork passed 64`);
    tt.equal(o.hostForks, 20, 'the host forked 20 processes during the bomb');
    tt.equal(o.line?.['reason'], 'pids-limit', 'the ledger says pids-limit');
    // Measured in the VM tier's guest: the session's slice read 65, the container's cgroup 64 and
    // conmon's scope 1 (conmon itself, moved in by podman). The ledger counts the container's.
    const [peak, basis] = [o.line?.['peak']?.['pids'] as number, String(o.line?.['evidence']?.['pidsPeakBasis'] ?? '')];
    tt.ok(peak <= 64, `the ledger's peak pids ${peak} is within the limit (${basis || 'no basis'})`);
    tt.match(basis, /pids\.peak|samples/, 'the ledger says what its peak counted');
    tt.notOk(o.containerLeft, 'no container is left');
  },
);

floodRows(t, hostTier, runs, unwrap);

t.teardown(() => {
  t.comment(
    `escape attempts: ${attempts.length} in the probe session, ${runs?.git.size ?? 0} git sessions, ${runs?.store.size ?? 0} git store sessions, ${runs?.planted.size ?? 0} planted-link sessions, ${hostTier.skip ? '0 naming sessions, 5 lifecycle sessions, 0 floods (the rest is proved on the host tier)' : '1 naming session, 1 user-tools session, 7 lifecycle sessions, 3 floods'}, ${Math.round((Date.now() - suiteStart) / 1000)} s`,
  );
});

// Escape attempts from inside real sessions started through the launcher (`agent-sandbox run`),
// made as the agent would make them, each a test titled with its claim (issue 14, item 5).
// The sessions run concurrently and each test awaits its own: one probe session makes most
// attempts (network, mounts, namespaces, kernel interfaces, host processes, privilege, the
// podman socket, the host's files, the credential source) while another session runs beside
// it in the same root as its target; one session per git-to-host path, in a linked worktree
// and in a plain repository, after which the host user runs git; and sessions for the launcher's
// own ceilings (kill -9, --timeout, --disk, --pids). Where an attempt would change the host, the
// host is checked too. Peers with the same claim are named in the title.
import t from 'tap';
import { needs } from '@agent-sandbox/testkit';
import { hostAttempts, signalAttempt } from './escape/attempts-host.js';
import { kernelAttempts } from './escape/attempts-kernel.js';
import { mountAttempts, namespaceAttempts, networkAttempts } from './escape/attempts-network-mounts.js';
import { gitPaths, gitPeers } from './escape/git-attacks.js';
import type { StoreAttackOutcome } from './escape/git-store-attacks.js';
import { sections, titleOf, type Asserts } from './escape/probe-script.js';
import { gitKinds, hostTargets, startAll } from './escape/runs.js';
import type { Settled } from './escape/session-kit.js';

// Root: the host user is simulated with setpriv and the workspaces are handed to uid 1000;
// cgroup v1: the attempts read and write this host's v1 cgroup files; x64: they name system
// calls by their x86_64 numbers (and the probe stops on another machine).
const req = needs({ root: true, cgroup: 'v1', arch: 'x64', podman: true, images: ['localhost/agent-sandbox-agents:latest'], commands: ['setpriv', 'perl', 'git', 'du'] });
const suiteStart = Date.now();
const attempts = [...networkAttempts, ...mountAttempts, ...namespaceAttempts, ...kernelAttempts, ...hostAttempts, signalAttempt];
// Started only where the suite can run; the tests below are skipped, with the reason, elsewhere.
const runs = req.skip ? undefined : startAll(t, await hostTargets(t), attempts);

function unwrap<T>(tt: Asserts, s: Settled<T>): T | undefined {
  tt.ok(s.ok, s.ok ? 'the session ran' : `the session could not be run: ${s.error}`);
  return s.ok ? s.value : undefined;
}

// ---- the tests ----
let checked = 0;
for (const a of attempts) {
  t.test(titleOf(a), req, async (tt) => {
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
  tt.equal(checked, attempts.length, 'every row was checked');
  tt.ok(attempts.length >= 30, `${attempts.length} attempts in the probe session`);
  const slow = [...(p?.stdout ?? '').matchAll(/^@@took (\S+) (\d+) ms$/gm)].filter((m) => Number(m[2]) >= 500).map((m) => `${m[1]} ${m[2]} ms`);
  tt.comment(`probe session ${p?.ms} ms; attempts over 0.5 s: ${slow.join(', ') || 'none'}`);
});

for (const kind of gitKinds) {
  for (const { path: p, what } of gitPaths) {
    t.test(`${kind}: ${what} runs nothing on the host in the host user's git status, commit, checkout or merge [peer: ${gitPeers}]`, req, async (tt) => {
      const run = unwrap(tt, await runs!.git.get(`${kind}/${p}`)!);
      if (!run) return;
      tt.equal(run.end.exitCode, 0, `the planting session ran (stderr tail: ${run.end.stderr.slice(-300)})`);
      tt.match(run.end.stdout, /^agent-commit=0$/m, 'the agent committed inside');
      tt.same(run.host.markers, [], 'no planted command ran on the host');
      tt.same(run.host.failures, [], "the host user's git commands all succeed");
      tt.ok(run.host.agentCommitOnBranch, "the agent's own commit is on its branch in the host repository");
    });
  }
}

/** What holds after any attack on the session's git state: the host repository whole, every ref but the session's branch as it was, the ledger bounded. */
function hostRepositoryWhole(tt: Asserts, o: StoreAttackOutcome): void {
  tt.equal(o.fsck.exitCode, 0, `git fsck --full on the host repository is clean (${o.fsck.stderr.trim().split('\n').slice(0, 3).join(' | ')})`);
  tt.equal(o.after.refs, o.before.refs, 'main, every other branch and every tag are unchanged, and no ref the session made exists on the host');
  tt.ok(o.lineBytes.length > 0 && o.lineBytes.every((n) => n < 64 * 1024), `every ledger line is under 64 KiB (${o.lineBytes.join(', ')} bytes)`);
  tt.ok(o.end.stderr.length < 16 * 1024 && (o.end.stderr.match(/refs\//g) ?? []).length <= 22, `stderr is bounded (${o.end.stderr.length} bytes, ${(o.end.stderr.match(/refs\//g) ?? []).length} ref names)`);
}

for (const kind of gitKinds) {
  t.test(`${kind}: a session that deletes every object, ref and log it can reach, then recovers and commits honestly: the host repository is whole and the honest commit is on its branch [peer: Docker Sandboxes clone mode]`, req, async (tt) => {
    const o = unwrap(tt, await runs!.store.get(`${kind}/wipe`)!);
    if (!o) return;
    const out = o.end.stdout;
    tt.equal(o.end.exitCode, 0, `the session ran (stderr tail: ${o.end.stderr.slice(-300)})`);
    tt.match(out, /^early-commit=0$/m, 'the agent worked a little first');
    tt.ok(Number(/^store-objects-before=(\d+)/m.exec(out)?.[1]) > 0 && /^store-objects-after=0 /m.test(out), `the wipe itself succeeded inside: every object file of the git dir it sees is gone (${out.match(/store-objects-\w+=\d+/g)?.join(' ')})`);
    tt.match(out, /^store-refs-after=0$/m, 'and every ref file, packed-refs and log');
    tt.match(out, / alternates=\/sandbox\/git\/live\/objects$/m, 'but not what ties its store to the host objects (objects/info/alternates is pinned)');
    tt.match(out, /Read-only file system/, "the host's own objects and refs are read-only inside");
    tt.ok(Number(/^live-objects-after=(\d+)$/m.exec(out)?.[1]) > 0, "the host's objects are all still there, seen from inside");
    tt.match(out, /^recover=0$/m, 'the honest agent put its branch back at the tip it remembered');
    tt.match(out, /^honest-commit=0$/m, 'and committed');
    hostRepositoryWhole(tt, o);
    tt.ok(o.honestOnBranch, "the agent's honest commit is on its branch in the host repository");
    tt.notMatch(o.branchLog, /early work/, 'the early commit went with the objects the session deleted');
    tt.match(o.line?.['gitReturn'], { outcome: 'fast-forward' }, 'the ledger says it came home');
  });

  t.test(`${kind}: 100 000 refs, a moved main, other branch and tag, a replace ref, a note and gc --prune=now stay in the session's store; its honest commit comes home`, req, async (tt) => {
    const o = unwrap(tt, await runs!.store.get(`${kind}/flood`)!);
    if (!o) return;
    const out = o.end.stdout;
    tt.equal(o.end.exitCode, 0, `the session ran (stderr tail: ${o.end.stderr.slice(-300)})`);
    for (const step of ['honest-commit', 'move-main', 'move-other', 'move-tag', 'replace', 'note', 'flood', 'gc']) tt.match(out, new RegExp(`^${step}=0$`, 'm'), `${step} succeeded inside`);
    tt.ok(Number(/^refs-inside=(\d+)$/m.exec(out)?.[1]) >= 100_000, `the session's own git for-each-ref counts ${/^refs-inside=(\d+)$/m.exec(out)?.[1]} refs`);
    tt.match(out, /^honest-survives-gc$/m, 'its commit survived its gc --prune=now');
    hostRepositoryWhole(tt, o);
    tt.ok(o.honestOnBranch, "the agent's honest commit is on its branch in the host repository");
    const r = o.line?.['gitReturn'];
    tt.match(r, { outcome: 'fast-forward' }, 'by fast-forward');
    tt.equal(r?.refsDropped?.named?.length, 20, 'the ledger names 20 dropped refs');
    tt.ok(r?.refsDropped?.named?.length + r?.refsDropped?.others >= 100_004, `and counts the rest (${r?.refsDropped?.others} more)`);
    tt.match(o.end.stderr, /ref changes outside .* were dropped: .* and \d+ more/, 'stderr says so, 20 named then a count');
  });
}

t.test('control: the same wipe against a plain read-write bind of the objects (the layout before the store) destroys a throwaway copy', req, async (tt) => {
  const c = unwrap(tt, await runs!.storeControl);
  if (!c) return;
  tt.equal(c.fsckBefore, 0, 'the copy was whole before');
  tt.match(c.run.stdout, /wipe-objects=0/, 'the wipe ran in the container');
  tt.not(c.fsck, 0, 'git fsck --full on the copy fails afterwards');
  tt.not(c.mainAfter, 0, 'main names a missing object');
});

t.test('control: without the pinned alternates the same wipe cuts a store off the host objects and the honest commit fails; with them it succeeds', req, async (tt) => {
  const c = unwrap(tt, await runs!.pinControl);
  if (!c) return;
  tt.match(c.pinned.stdout, / alternates=\/sandbox\/git\/live\/objects$/m, 'pinned: the alternates file survives the wipe');
  tt.match(c.pinned.stdout, /^recover=0$/m, 'pinned: the recovery works');
  tt.match(c.pinned.stdout, /^honest-commit=0$/m, 'pinned: the honest commit works');
  tt.match(c.unpinned.stdout, /^store-objects-after=0 alternates=$/m, 'unpinned: the wipe took the alternates file');
  tt.notMatch(c.unpinned.stdout, /^recover=0$/m, 'unpinned: the remembered tip is an object the store no longer sees');
  tt.notMatch(c.unpinned.stdout, /^honest-commit=0$/m, 'unpinned: the honest commit fails');
});

t.test('a commit, then kill -9 of the launcher and its sentinel: the next launcher start brings the commit home (linked worktree)', req, async (tt) => {
  const k = unwrap(tt, await runs!.committedThenKilled);
  if (!k) return;
  tt.ok(k.committed, 'the agent committed before the kill');
  tt.equal(k.nextStart.exitCode, 0, `the next launcher start (plan) ran (${k.nextStart.stderr.slice(-200)})`);
  tt.ok(k.honestOnBranch, 'the commit is on the branch afterwards');
  tt.match(k.abandoned, { reason: 'abandoned', gitReturn: { outcome: 'fast-forward', by: 'the next launcher start' } }, 'the ledger line says the next start brought it home');
  tt.notOk(k.storeLeft, 'the store is removed once imported');
});

t.test('a commit, then kill -9 of the launcher: its sentinel brings the commit home (plain repository)', req, async (tt) => {
  const k = unwrap(tt, await runs!.committedThenLauncherKilled);
  if (!k) return;
  tt.ok(k.committed, 'the agent committed before the kill');
  tt.ok(k.honestOnBranch, 'the commit is on the branch after the next start');
  tt.match(k.abandoned, { reason: 'abandoned', gitReturn: { outcome: 'fast-forward', by: 'its sentinel' } }, 'the ledger line says its sentinel brought it home');
  tt.notOk(k.storeLeft, 'the store is removed once imported');
});

t.test('kill -9 of the launcher: the container is gone within 5 s, one "abandoned" line, nothing of the session left (credential copies, record, cidfile, parent cgroup, podman scratch directories) [peer: sandbox-runtime "should kill child processes when sandbox is terminated via SIGTERM (--die-with-parent)"]', req, async (tt) => {
  const k = unwrap(tt, await runs!.killedAlone);
  if (!k) return;
  tt.ok(k.goneAfterMs !== undefined && k.goneAfterMs <= 5000, `the container is gone ${k.goneAfterMs} ms after the SIGKILL`);
  tt.equal(k.abandoned.length, 1, 'the ledger has the session\'s line with reason "abandoned"');
  tt.equal(k.nextStart?.exitCode, 0, 'the next launcher start (plan) runs');
  tt.equal(k.linesAfterNextStart.length, 1, 'and writes no second line for it');
  tt.notOk(k.stagedLeft, 'the staged credential copy is removed');
  tt.notOk(k.installedLeft, 'the installed copy is removed from the session home');
  tt.same(k.leftovers, [], 'no session record, cidfile, parent cgroup or podman scratch directory is left');
});

t.test('kill -9 of the launcher and its sentinel: the next launcher start removes the container and all the session left, and writes the "abandoned" line', req, async (tt) => {
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
});

t.test('--timeout 5s ends an agent that sleeps for ten minutes, reason "timeout" [peer: codex linux-sandbox test_timeout; sandbox-runtime "should not leave orphan processes after timeout kills sandbox"]', req, async (tt) => {
  const o = unwrap(tt, await runs!.timedOut);
  if (!o) return;
  // Far below the agent's own ten minutes; the margin is for a loaded machine (start-up included).
  tt.ok(o.end.ms >= 5000 && o.end.ms < 120_000, `the launcher returned after ${o.end.ms} ms`);
  tt.equal(o.line?.['reason'], 'timeout', 'the ledger says timeout');
  tt.notOk(o.containerLeft, 'no container is left');
});

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
  tt.ok(o.left <= o.limit + overshoot, `the session's directories hold ${o.left} bytes: the host keeps its free space but for the ceiling and the overshoot`);
  tt.ok(o.freeAfter > o.limit, `the file system still has room (${o.freeAfter} bytes free; ${o.freeBefore - o.freeAfter} fewer than before, other writers included)`);
  tt.notOk(o.containerLeft, 'no container is left');
});

t.test('a fork bomb is held at --pids 64 while the host keeps forking', req, async (tt) => {
  const o = unwrap(tt, await runs!.bombed);
  if (!o) return;
  tt.ok(o.bombing, 'the bomb started');
  tt.equal(o.end.exitCode, 0, `the agent ended by itself (stderr tail: ${o.end.stderr.slice(-200)})`);
  const m = /^bomb peak=(\d+) max=(\d+) events=max (\d+)$/m.exec(o.end.stdout);
  tt.ok(m, `the bomb reported its counters: ${o.end.stdout.trim()}`);
  tt.ok(Number(m?.[1]) <= 64 && Number(m?.[1]) >= 60, `inside, pids.current peaked at ${m?.[1]} of 64`);
  tt.equal(m?.[2], '64', 'pids.max is 64');
  tt.ok(Number(m?.[3]) > 0, `forks were refused (${m?.[3]})`);
  tt.equal(o.hostForks, 20, 'the host forked 20 processes during the bomb');
  tt.equal(o.line?.['reason'], 'pids-limit', 'the ledger says pids-limit');
  tt.ok((o.line?.['peak']?.['pids'] as number) <= 64, `peak pids ${o.line?.['peak']?.['pids']} within the limit`);
  tt.notOk(o.containerLeft, 'no container is left');
});

t.teardown(() => {
  t.comment(`escape attempts: ${attempts.length} in the probe session, ${runs?.git.size ?? 0} git sessions, ${runs?.store.size ?? 0} git store sessions, 7 lifecycle sessions, ${Math.round((Date.now() - suiteStart) / 1000)} s`);
});

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
import { sections, titleOf, type Asserts } from './escape/probe-script.js';
import { gitKinds, hostTargets, startAll } from './escape/runs.js';
import type { Settled } from './escape/session-kit.js';
import { plantCases, plantModes, type PlantCase, type PlantMode, type PlantOutcome } from './escape/planted-links.js';
import { bytesOf, hostileNames, rawControls } from './escape/terminal-names.js';

// Root: the host user is simulated with setpriv and the workspaces are handed to uid 1000;
// cgroup v1: the attempts read and write this host's v1 cgroup files.
const req = needs({ root: true, cgroup: 'v1', podman: true, images: ['localhost/agent-sandbox-agents:latest'], commands: ['setpriv', 'perl', 'git', 'du'] });
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

const plantTitle = (c: PlantCase, mode: PlantMode) =>
  `a ${c.runtime} session links .codex, .claude and .config/cursor to ${c.toEtc ? '/etc' : "the host user's own"} and the entrypoint log to ${c.toEtc ? '/etc/passwd' : 'its credential'}; ${mode}: ${c.toEtc ? "/etc's files" : "the host user's files"} are byte-identical, each link is removed as a link and named in the ledger [control: the old rmSync through the link deletes the file on a copy]`;

function checkPlant(tt: Asserts, c: PlantCase, o: PlantOutcome): void {
  tt.equal(o.end.exitCode, 0, `the ${o.mode === 'normal end' ? 'session' : 'next start'} exits 0 (stderr tail: ${o.end.stderr.slice(-300)})`);
  tt.match(o.agentStdout, /^installed-before=1$/m, `the ${c.runtime} credential was installed where the link went`);
  tt.same(o.plants.map(([name]) => `/sandbox/home/${name}`).sort(), o.expectedPaths, 'the session planted every link');
  for (const f of o.hostFiles) tt.equal(f.after, f.before, `${f.file}: sha256 unchanged (${f.before.slice(0, 12)})`);
  tt.same(o.linksLeft, [], 'no link is left in the home');
  tt.notOk(o.installedLeft, 'the installed copy is gone from the home');
  tt.equal(o.lines.length, 1, 'one ledger line');
  const line = o.lines[0] ?? {};
  if (o.mode === 'normal end') tt.equal(line['reason'], 'exited', 'the session ended by itself');
  else tt.same([line['reason'], line['evidence']?.['cause']], ['abandoned', 'the next launcher start'], 'the next launcher start swept it');
  tt.same((line['planted']?.['named'] ?? []).map((p: { path: string }) => p.path).sort(), o.expectedPaths, 'the ledger names every planted link');
  tt.same(line['planted']?.['named']?.map((p: { path: string; target: string }) => [p.path.slice('/sandbox/home/'.length), p.target]).sort(), [...o.plants].sort(), 'with what it pointed at');
  tt.match(o.end.stderr, /left symbolic links where the launcher cleans up: .*removed as a link/, 'and stderr says so');
  tt.ok(o.control.existedBefore && o.control.deleted, `control: on a copy, the old clean-up through the link deletes ${o.control.followed}`);
}

for (const c of plantCases) {
  for (const mode of plantModes) {
    t.test(plantTitle(c, mode), req, async (tt) => {
      const o = unwrap(tt, await runs!.planted.get(`${c.label}/${mode}`)!);
      if (o) checkPlant(tt, c, o);
    });
  }
}

t.test('names with ESC, BEL, C1 controls and bytes that are not UTF-8 (files, directories, nested repositories, refs, a planted link) reach the terminal escaped: no raw control byte on the launcher\'s stderr; a FIFO planted as a ref does not hold up the session\'s end', req, async (tt) => {
  const o = unwrap(tt, await runs!.names);
  if (!o) return;
  tt.equal(o.exitCode, 0, `the session ran and ended (stderr: ${JSON.stringify(o.stderr.toString('latin1').slice(-300))})`);
  const onDisk = (list: Buffer[], f: string) => list.some((b) => b.equals(bytesOf(f)));
  for (const k of ['nested', 'nestedC1', 'nestedRawC1', 'nestedBad', 'dir', 'file'] as const) tt.ok(onDisk(o.onDisk, hostileNames[k]), `control: ${k} is on disk with its raw bytes`);
  for (const k of ['ref', 'refBad'] as const) tt.ok(onDisk(o.refsOnDisk, hostileNames[k]), `control: the ${k} file is on disk with its raw bytes`);
  tt.same(rawControls(o.stderr), [], 'no ESC, BEL, other C0, DEL, C1 or non-UTF-8 byte on stderr');
  const text = o.stderr.toString('utf8');
  for (const shown of [
    'a nested git gitdir was added at n\\e]0;TITLE-SET-BY-AGENT\\a\\e[2K\\e[1Afake/.git',
    'added at c1-\\u009b-31m/.git', 'added at raw-\\x9b-2J/.git', 'added at bad-\\xff\\xfe-utf8/.git',
    'ref refs/heads/ref-\\e[2K\\a changed', 'ref refs/heads/ref-\\xff-x changed', 'ref refs/heads/br-\\u009b-1A changed',
    '/sandbox/home/.codex -> /x/\\e]0;link\\a',
  ]) tt.ok(text.includes(shown), `stderr shows ${shown}`);
  tt.notOk(o.ledger.includes(0x1b) || o.ledger.includes(0x07), 'the ledger keeps the names JSON-escaped');
  tt.ok(o.line?.['nestedGit']?.some((n: { path: string }) => n.path === 'n\x1b]0;TITLE-SET-BY-AGENT\x07\x1b[2K\x1b[1Afake/.git'), 'and names the repository exactly');
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
  t.comment(`escape attempts: ${attempts.length} in the probe session, ${runs?.git.size ?? 0} git sessions, ${runs?.planted.size ?? 0} planted-link sessions, 1 naming session, 5 lifecycle sessions, ${Math.round((Date.now() - suiteStart) / 1000)} s`);
});

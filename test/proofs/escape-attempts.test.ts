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
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { cgroupMode } from '@agent-sandbox/shared';
import { imageExists } from '@agent-sandbox/testkit';
import { runtimeMounts } from './session.js';
import { hostAttempts, signalAttempt } from './escape/attempts-host.js';
import { globalSysctls, kernelAttempts, readSysctl } from './escape/attempts-kernel.js';
import { mountAttempts, namespaceAttempts, networkAttempts } from './escape/attempts-network-mounts.js';
import { gitPaths, gitPeers, hostEverydayGit, plantScript, prepareGitSession, type GitKind } from './escape/git-attacks.js';
import { addHostKey, removeHostKey, removeStaleHostKeys } from './escape/host-keyring.js';
import { diskSession, forkBombSession, killLauncher, timeoutSession } from './escape/lifecycle.js';
import type { ProbeCtx } from './escape/probe-context.js';
import { probeScript, sections, titleOf, type Asserts } from './escape/probe-script.js';
import {
  addWorkspace, chownAgent, containerState, launch, launcherCommand, limiter, sessionRoot, settle, waitFor, type Settled,
} from './escape/session-kit.js';

if (process.getuid?.() !== 0 || cgroupMode() === 'v2') {
  t.skip('these attempts need root (the host user is simulated with setpriv) and read cgroup v1 files', () => undefined);
  process.exit(0);
}
if (!(await imageExists('localhost/agent-sandbox-agents:latest'))) throw new Error('localhost/agent-sandbox-agents:latest is missing: run bash scripts/setup.sh');
const suiteStart = Date.now();
const hex = randomBytes(6).toString('hex');
const pidsLimit = 256;

// ---- what the attacker aims at on the host ----
for (const f of readdirSync('/').filter((n) => n.startsWith('astest-escape-'))) rmSync(`/${f}`, { force: true });
const hostCanary = `/astest-escape-${hex}`;
await writeFile(hostCanary, `${hostCanary}\n`);
const hostMarker = `astest-escape-sleep-${hex}`;
// One process (no shell between): SIGKILL at teardown ends it, and no pipe keeps this file alive.
const hostSleep = execa('perl', ['-e', 'sleep 600', hostMarker], { reject: false, stdio: 'ignore' });
const loopback = net.createServer((s) => s.end()).listen({ host: '127.0.0.1', port: 0 });
const abstractName = `astest-escape-${hex}`;
const abstract = net.createServer((s) => s.end()).listen(`\0${abstractName}`);
const hostKey = { description: `astest-escape-key-${hex}`, value: `host-key-canary-${hex}` };
await removeStaleHostKeys('astest-escape-key-');
await addHostKey(hostKey.description, hostKey.value);
t.teardown(async () => {
  hostSleep.kill('SIGKILL');
  loopback.close();
  abstract.close();
  await rm(hostCanary, { force: true });
  await removeHostKey(hostKey.description);
});
if (!loopback.listening) await new Promise((resolve) => loopback.once('listening', resolve));

// ---- the probe session and the session beside it ----
async function probeGroup(): Promise<{ ctx: ProbeCtx; stdout: string; exitCode: number; stderr: string; ms: number }> {
  const r = await sessionRoot(t, 'probe');
  const victimCanary = `astest-other-session-${hex}`;
  const victimScript = '#!/bin/sh\n: > "$PWD/.ready"\ni=0; while [ ! -e "$PWD/.release" ] && [ $i -lt 1800 ]; do sleep 0.1; i=$((i+1)); done\necho "victim released"\n';
  const victim = await addWorkspace(t, r, 'victim', { 'victim.sh': victimScript, 'notes.txt': `${victimCanary}\n` });
  await mkdir(victim.home, { recursive: true });
  await writeFile(path.join(victim.home, '.history'), `${victimCanary}\n`);
  await chownAgent(victim.home);
  const files = new Map([path.join(victim.path, 'notes.txt'), path.join(victim.home, '.history')].map((f) => [f, [readFileSync(f, 'utf8'), statSync(f).mtimeMs] as [string, number]]));
  const victimRun = launch(r, victim, `${victim.inside}/victim.sh`, []);
  const ready = await waitFor(() => { try { statSync(path.join(victim.path, '.ready')); return true; } catch { return false; } }, 90_000);
  const victimState = await containerState(victim.container);
  if (!ready || !victimState) throw new Error(`the other session did not start: ${JSON.stringify(await Promise.race([victimRun.done, new Promise((res) => setTimeout(res, 100))]))}`);

  const ws = await addWorkspace(t, r, 'probe');
  const plan = JSON.parse((await launcherCommand(r, ws, 'plan', ['--pids', String(pidsLimit)])).stdout);
  const credentialBytes = readFileSync(r.credential);
  const ctx: ProbeCtx = {
    ws,
    hostPid: hostSleep.pid!,
    hostMarker,
    victim: { ws: victim, canary: victimCanary, secretsDir: path.join(r.root, 'secrets', victim.id), agentHostPid: victimState.pid, files },
    hostCanary,
    hostLoopbackPort: (loopback.address() as net.AddressInfo).port,
    abstractName,
    hostKey,
    credential: { path: r.credential, bytes: credentialBytes, mtimeMs: statSync(r.credential).mtimeMs, canary: r.canary },
    expectedMounts: { ...runtimeMounts(), ...Object.fromEntries(plan.mounts.map((m: { destination: string; readOnly: boolean }) => [m.destination, m.readOnly ? 'ro' : 'rw'])) },
    pidsLimit,
    host: { hostname: os.hostname(), sysctl: Object.fromEntries(globalSysctls.map((f) => [f, readSysctl(f)])) },
  };
  await writeFile(path.join(ws.path, '.astest', 'probe.sh'), probeScript(attempts, ctx, `${ws.inside}/.astest`), { mode: 0o755 });
  await chownAgent(ws.path);
  const probe = await launch(r, ws, `${ws.inside}/.astest/probe.sh`, [], ['--pids', String(pidsLimit)]).done;
  await writeFile(path.join(victim.path, '.release'), '');
  const victimEnd = await victimRun.done;
  ctx.victimOutcome = { exitCode: victimEnd.exitCode, stdout: victimEnd.stdout };
  return { ctx, ...probe };
}

const attempts = [...networkAttempts, ...mountAttempts, ...namespaceAttempts, ...kernelAttempts, ...hostAttempts, signalAttempt];

// ---- one session per git-to-host path ----
const gitKinds: GitKind[] = ['linked worktree', 'plain repository'];
const gitRoot = sessionRoot(t, 'git');
const slot = limiter(3);
async function gitAttack(kind: GitKind, gitPath: (typeof gitPaths)[number]['path']) {
  const r = await gitRoot;
  const label = `${kind === 'plain repository' ? 'plain' : 'linked'}-${gitPath.replace(/\W/g, '')}`.slice(0, 24);
  const s = await prepareGitSession(r, kind, gitPath, (prepare) => addWorkspace(t, r, label, {}, prepare));
  await writeFile(path.join(s.ws.path, '.astest', 'plant.sh'), plantScript(s), { mode: 0o755 });
  await chownAgent(s.ws.path);
  const end = await launch(r, s.ws, `${s.ws.inside}/.astest/plant.sh`, [], s.extraFlags).done;
  return { end, host: await hostEverydayGit(r.base, s) };
}

// ---- start everything: the probe group, the git sessions and --timeout beside it, then the rest ----
const probed = settle(probeGroup());
const gitRuns = new Map<string, Promise<Settled<Awaited<ReturnType<typeof gitAttack>>>>>();
for (const kind of gitKinds) for (const { path: p } of gitPaths) gitRuns.set(`${kind}/${p}`, settle(slot(() => gitAttack(kind, p))));
const timedOut = settle(timeoutSession(t));
const phase1 = Promise.all([probed, timedOut, ...gitRuns.values()]);
const killedAlone = settle(phase1.then(() => killLauncher(t, 'kill1', false)));
const killedWithSentinel = settle(phase1.then(() => killLauncher(t, 'kill2', true)));
const diskFilled = settle(phase1.then(() => diskSession(t)));
const bombed = settle(Promise.all([killedAlone, killedWithSentinel, diskFilled]).then(() => forkBombSession(t)));

function unwrap<T>(tt: Asserts, s: Settled<T>): T | undefined {
  tt.ok(s.ok, s.ok ? 'the session ran' : `the session could not be run: ${s.error}`);
  return s.ok ? s.value : undefined;
}

// ---- the tests ----
let checked = 0;
for (const a of attempts) {
  t.test(titleOf(a), async (tt) => {
    const p = unwrap(tt, await probed);
    if (!p) return;
    const out = sections(p.stdout).get(a.key);
    tt.ok(out !== undefined, `the attempt ran and reported (probe session exit ${p.exitCode}; stderr tail: ${p.stderr.slice(-300)})`);
    if (out === undefined) return;
    await a.check(tt, out, p.ctx);
    checked += 1;
  });
}
t.test('the probe session ran every attempt to its end, and the table was checked row by row', async (tt) => {
  const p = unwrap(tt, await probed);
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
    t.test(`${kind}: ${what} runs nothing on the host in the host user's git status, commit, checkout or merge [peer: ${gitPeers}]`, async (tt) => {
      const run = unwrap(tt, await gitRuns.get(`${kind}/${p}`)!);
      if (!run) return;
      tt.equal(run.end.exitCode, 0, `the planting session ran (stderr tail: ${run.end.stderr.slice(-300)})`);
      tt.match(run.end.stdout, /^agent-commit=0$/m, 'the agent committed inside');
      tt.same(run.host.markers, [], 'no planted command ran on the host');
      tt.same(run.host.failures, [], "the host user's git commands all succeed");
      tt.ok(run.host.agentCommitOnBranch, "the agent's own commit is on its branch in the host repository");
    });
  }
}

t.test('kill -9 of the launcher: the container is gone within 5 s, one "abandoned" line, no credential copy left [peer: sandbox-runtime "should kill child processes when sandbox is terminated via SIGTERM (--die-with-parent)"]', async (tt) => {
  const k = unwrap(tt, await killedAlone);
  if (!k) return;
  tt.ok(k.goneAfterMs !== undefined && k.goneAfterMs <= 5000, `the container is gone ${k.goneAfterMs} ms after the SIGKILL`);
  tt.equal(k.abandoned.length, 1, 'the ledger has the session\'s line with reason "abandoned"');
  tt.equal(k.nextStart?.exitCode, 0, 'the next launcher start (plan) runs');
  tt.equal(k.linesAfterNextStart.length, 1, 'and writes no second line for it');
  tt.notOk(k.stagedLeft, 'the staged credential copy is removed');
  tt.notOk(k.installedLeft, 'the installed copy is removed from the session home');
  tt.same(k.leftovers, [], 'no session record, cidfile or parent cgroup is left');
});

t.test('kill -9 of the launcher and its sentinel: the next launcher start removes the container and writes the "abandoned" line', async (tt) => {
  const k = unwrap(tt, await killedWithSentinel);
  if (!k) return;
  tt.ok(k.stillRunningBeforeSweep, 'control: with its sentinel dead too, the container was still running');
  tt.equal(k.nextStart?.exitCode, 0, 'the next launcher start (plan) runs');
  tt.ok(k.goneAfterMs !== undefined, 'the container is gone when it returns');
  tt.equal(k.abandoned.length, 1, 'one line with reason "abandoned"');
  tt.equal(k.abandoned[0]?.['evidence']?.['cause'], 'the next launcher start', 'written by the next launcher start');
  tt.notOk(k.stagedLeft, 'the staged credential copy is removed');
  tt.notOk(k.installedLeft, 'the installed copy is removed from the session home');
  tt.same(k.leftovers, [], 'no session record, cidfile or parent cgroup is left');
});

t.test('--timeout 5s ends an agent that sleeps for ten minutes, reason "timeout" [peer: codex linux-sandbox test_timeout; sandbox-runtime "should not leave orphan processes after timeout kills sandbox"]', async (tt) => {
  const o = unwrap(tt, await timedOut);
  if (!o) return;
  tt.ok(o.end.ms >= 5000 && o.end.ms < 30_000, `the launcher returned after ${o.end.ms} ms`);
  tt.equal(o.line?.['reason'], 'timeout', 'the ledger says timeout');
  tt.notOk(o.containerLeft, 'no container is left');
});

t.test('a writer with no end under --disk 256m is stopped: reason "disk-limit", and the host keeps its free space', async (tt) => {
  const o = unwrap(tt, await diskFilled);
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

t.test('a fork bomb is held at --pids 64 while the host keeps forking', async (tt) => {
  const o = unwrap(tt, await bombed);
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
  t.comment(`escape attempts: ${attempts.length} in the probe session, ${gitRuns.size} git sessions, 5 lifecycle sessions, ${Math.round((Date.now() - suiteStart) / 1000)} s`);
});

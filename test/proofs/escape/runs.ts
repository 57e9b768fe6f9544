// The suite's sessions, started at once and each awaited by its own tests: the probe session
// with the other session beside it, one session per git-to-host path and per attack on the
// session's git store, --timeout beside them; then the launcher kills (two after a commit), --disk
// and, alone at the end, the fork bomb (it would skew timings) and the floods, one after another.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { chmod, copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { Teardown } from '@agent-sandbox/testkit';
import { parseMountinfo, runtimeMounts } from '../session.js';
import { globalSysctls, readSysctl } from './attempts-kernel.js';
import { gitPaths, hostEverydayGit, plantScript, prepareGitSession, type GitKind, type GitPath } from './git-attacks.js';
import { killAfterCommit, storeAttack, storeAttacks, wipeWithSharedObjects } from './git-store-attacks.js';
import { wipeWithAndWithoutPin } from './git-store-controls.js';
import { addHostKey, listHostKeys, removeHostKeys } from './host-keyring.js';
import { egressFlood, filesFlood } from './floods.js';
import { diskSession, forkBombSession, killLauncher, timeoutSession } from './lifecycle.js';
import { plantCases, plantModes, plantSession } from './planted-links.js';
import { namesSession } from './terminal-names.js';
import type { ProbeCtx } from './probe-context.js';
import { probeScript, type Attempt } from './probe-script.js';
import {
  addWorkspace, chownAgent, containerState, launch, limiter, patience, rootful, sessionRoot, settle, sleep, waitFor, type SessionRoot, type Settled,
} from './session-kit.js';

export const pidsLimit = 256;
export const gitKinds: GitKind[] = ['linked worktree', 'plain repository'];

/** The pid a run's target name carries, when that run is over (its process is gone): what it left may go. */
function deadRunOf(name: string, prefix: string): boolean {
  const pid = Number(new RegExp(`^${prefix}(\\d+)-[0-9a-f]+$`).exec(name)?.[1]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * What the attacker aims at on the host: a file in /, a process, two sockets, a kernel key.
 * Each name carries this run's pid and a random part, so that runs in other worktrees at the
 * same time keep theirs: only what a run that is over left behind is removed here.
 */
export async function hostTargets(t: Teardown) {
  const hex = `${process.pid}-${randomBytes(6).toString('hex')}`;
  // Root's canary is in the host's /; a rootless launcher's user cannot write there: in its /tmp.
  const canaryDir = rootful ? '/' : os.tmpdir();
  for (const f of readdirSync(canaryDir).filter((n) => deadRunOf(n, 'astest-escape-'))) rmSync(path.join(canaryDir, f), { force: true });
  for (const key of (await listHostKeys('astest-escape-key-')).filter((d) => deadRunOf(d, 'astest-escape-key-'))) await removeHostKeys(key);
  const hostCanary = path.join(canaryDir, `astest-escape-${hex}`);
  await writeFile(hostCanary, `${hostCanary}\n`);
  const hostMarker = `astest-escape-sleep-${hex}`;
  // One process (no shell between): SIGKILL at teardown ends it, and no pipe keeps the file alive.
  const hostSleep = execa('perl', ['-e', 'sleep 600', hostMarker], { reject: false, stdio: 'ignore' });
  const loopback = net.createServer((s) => s.end()).listen({ host: '127.0.0.1', port: 0 });
  const abstractName = `astest-escape-${hex}`;
  const abstract = net.createServer((s) => s.end()).listen(`\0${abstractName}`);
  const hostKey = { description: `astest-escape-key-${hex}`, value: `host-key-canary-${hex}` };
  await addHostKey(hostKey.description, hostKey.value);
  t.teardown(async () => {
    hostSleep.kill('SIGKILL');
    loopback.close();
    abstract.close();
    await rm(hostCanary, { force: true });
    await removeHostKeys(hostKey.description);
  });
  if (!loopback.listening) await new Promise((resolve) => loopback.once('listening', resolve));
  const port = (loopback.address() as net.AddressInfo).port;
  return { hex, hostCanary, hostMarker, hostPid: hostSleep.pid!, port, abstractName, hostKey };
}
type Targets = Awaited<ReturnType<typeof hostTargets>>;

/** Where a host directory lies within its file system (mountinfo's root field of a bind mount of it), read from the host's mountinfo. */
function rootWithinItsFs(dir: string): string {
  const mounts = [...parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'))];
  const [point, m] = mounts.filter(([p]) => dir === p || dir.startsWith(p === '/' ? '/' : `${p}/`)).sort((a, b) => b[0].length - a[0].length)[0]!;
  return path.join(m.root, path.relative(point, dir));
}

/** The other session: it waits in its own workspace until released, with canaries in its files. */
async function startVictim(t: Teardown, r: SessionRoot, hex: string) {
  const canary = `astest-other-session-${hex}`;
  const script = `#!/bin/sh\n: > "$PWD/.ready"\ni=0; while [ ! -e "$PWD/.release" ] && [ $i -lt ${1800 * patience} ]; do sleep 0.1; i=$((i+1)); done\necho "victim released"\n`;
  const ws = await addWorkspace(t, r, 'victim', { 'victim.sh': script, 'notes.txt': `${canary}\n` });
  await mkdir(ws.home, { recursive: true });
  await writeFile(path.join(ws.home, '.history'), `${canary}\n`);
  await chownAgent(ws.home);
  const files = new Map([path.join(ws.path, 'notes.txt'), path.join(ws.home, '.history')].map((f) => [f, [readFileSync(f, 'utf8'), statSync(f).mtimeMs] as [string, number]]));
  const run = launch(r, ws, `${ws.inside}/victim.sh`, []);
  const ready = await waitFor(() => { try { statSync(path.join(ws.path, '.ready')); return true; } catch { return false; } }, 90_000 * patience);
  const state = await containerState(ws.container);
  if (!ready || !state) throw new Error(`the other session did not start: ${JSON.stringify(await Promise.race([run.done, sleep(100)]))}`);
  return { victim: { ws, canary, secretsDir: path.join(r.root, 'secrets', ws.id), agentHostPid: state.pid, files }, run };
}

/** The probe session, beside the other session in the same root; returns its output and context. */
async function probeGroup(t: Teardown, h: Targets, attempts: Array<Attempt<ProbeCtx>>) {
  const r = await sessionRoot(t, 'probe');
  const { victim, run: victimRun } = await startVictim(t, r, h.hex);
  const ws = await addWorkspace(t, r, 'probe');
  const ctx: ProbeCtx = {
    ws,
    hostPid: h.hostPid,
    hostMarker: h.hostMarker,
    victim,
    hostCanary: h.hostCanary,
    hostLoopbackPort: h.port,
    abstractName: h.abstractName,
    hostKey: h.hostKey,
    credential: { path: r.credential, bytes: readFileSync(r.credential), mtimeMs: statSync(r.credential).mtimeMs, canary: r.canary },
    // What a codex session on this request must have mounted, stated here rather than read from the launcher's plan.
    expectedMounts: { ...runtimeMounts(), [ws.inside]: 'rw', '/sandbox/home': 'rw', '/sandbox-secrets/codex/auth.json': 'ro', '/run/sandbox-egress': 'ro' },
    mountSources: { [ws.inside]: rootWithinItsFs(ws.path), '/sandbox/home': rootWithinItsFs(ws.home) },
    setuidPlant: { host: path.join(ws.path, '.astest', 'suid-root-perl'), inside: `${ws.inside}/.astest/suid-root-perl` },
    pidsLimit,
    host: { hostname: os.hostname(), sysctl: Object.fromEntries(globalSysctls.map((f) => [f, readSysctl(f)])) },
  };
  await writeFile(path.join(ws.path, '.astest', 'probe.sh'), probeScript(attempts, ctx, `${ws.inside}/.astest`), { mode: 0o755 });
  await chownAgent(ws.path);
  // After the chown: root's, setuid. The setuid attempt's plant and, run on the host, its control (root only: the row's rootOnly).
  if (rootful) {
    await copyFile('/usr/bin/perl', ctx.setuidPlant.host);
    await chmod(ctx.setuidPlant.host, 0o4755);
  }
  const probe = await launch(r, ws, `${ws.inside}/.astest/probe.sh`, [], ['--pids', String(pidsLimit)]).done;
  await writeFile(path.join(victim.ws.path, '.release'), '');
  const victimEnd = await victimRun.done;
  ctx.victimOutcome = { exitCode: victimEnd.exitCode, stdout: victimEnd.stdout };
  return { ctx, ...probe };
}

/** One planting session for one (kind, path), then the host user's git there. */
async function gitAttack(t: Teardown, root: Promise<SessionRoot>, kind: GitKind, gitPath: GitPath) {
  const r = await root;
  const label = `${kind === 'plain repository' ? 'plain' : 'linked'}-${gitPath.replace(/\W/g, '')}`.slice(0, 24);
  const s = await prepareGitSession(r, kind, gitPath, (prepare) => addWorkspace(t, r, label, {}, prepare));
  await writeFile(path.join(s.ws.path, '.astest', 'plant.sh'), plantScript(s), { mode: 0o755 });
  await chownAgent(s.ws.path);
  const end = await launch(r, s.ws, `${s.ws.inside}/.astest/plant.sh`, [], s.extraFlags).done;
  return { end, host: await hostEverydayGit(r.base, s) };
}

/** A session not started here: its rows are skipped (never awaited), with their reason. */
function notStarted<T>(): Promise<Settled<T>> {
  return Promise.resolve({ ok: false as const, error: 'not started: proved on the host tier' });
}

/**
 * Starts every session; nothing here rejects (each outcome is settled for its test). With
 * `hostTierRows` false (the VM tier's guest, a rootless launcher) the sessions whose claims do
 * not depend on the cgroup version, the OCI runtime or systemd (git to the host, the git store,
 * planted links, terminal names, the floods) are not started: their rows are skipped there.
 */
export function startAll(t: Teardown, h: Targets, attempts: Array<Attempt<ProbeCtx>>, { hostTierRows = true }: { hostTierRows?: boolean } = {}) {
  const probed = settle(probeGroup(t, h, attempts));
  const gitRoot = hostTierRows ? sessionRoot(t, 'git') : undefined;
  const slot = limiter(3);
  const git = new Map(gitRoot ? gitKinds.flatMap((kind) => gitPaths.map(({ path: p }) => [`${kind}/${p}`, settle(slot(() => gitAttack(t, gitRoot, kind, p)))] as const)) : []);
  // What a session does to its own git state (its store), and the control against shared objects.
  const storeRoot = hostTierRows ? sessionRoot(t, 'store') : undefined;
  const store = new Map(storeRoot ? gitKinds.flatMap((kind) => storeAttacks.map((a) => [`${kind}/${a}`, settle(slot(() => storeAttack(t, storeRoot, kind, a)))] as const)) : []);
  const storeControl = storeRoot ? settle(storeRoot.then((r) => wipeWithSharedObjects(t, r))) : notStarted<Awaited<ReturnType<typeof wipeWithSharedObjects>>>();
  const pinControl = storeRoot ? settle(storeRoot.then((r) => wipeWithAndWithoutPin(t, r))) : notStarted<Awaited<ReturnType<typeof wipeWithAndWithoutPin>>>();
  const timedOut = settle(timeoutSession(t));
  // Links planted where the launcher cleans up, and names made to drive a terminal (issue 29).
  const slot2 = limiter(2);
  const planted = new Map(hostTierRows ? plantCases.flatMap((c) => plantModes.map((m) => [`${c.label}/${m}`, settle(slot2(() => plantSession(t, c, m)))] as const)) : []);
  const names = hostTierRows ? settle(slot2(() => namesSession(t))) : notStarted<Awaited<ReturnType<typeof namesSession>>>();
  const phase1 = Promise.all([probed, timedOut, storeControl, pinControl, ...git.values(), ...store.values(), ...planted.values(), names]);
  const killedAlone = settle(phase1.then(() => killLauncher(t, 'kill1', false)));
  const killedWithSentinel = settle(phase1.then(() => killLauncher(t, 'kill2', true)));
  const committedThenKilled = hostTierRows
    ? settle(phase1.then(async () => killAfterCommit(t, await sessionRoot(t, 'kill3'), 'linked worktree', true)))
    : notStarted<Awaited<ReturnType<typeof killAfterCommit>>>();
  const committedThenLauncherKilled = hostTierRows
    ? settle(phase1.then(async () => killAfterCommit(t, await sessionRoot(t, 'kill4'), 'plain repository', false)))
    : notStarted<Awaited<ReturnType<typeof killAfterCommit>>>();
  const diskFilled = settle(phase1.then(() => diskSession(t)));
  const bombed = settle(Promise.all([killedAlone, killedWithSentinel, committedThenKilled, committedThenLauncherKilled, diskFilled]).then(() => forkBombSession(t)));
  // The floods last, one at a time: each measures the launcher's memory and the host's share.
  const filesFlooded = hostTierRows ? settle(bombed.then(() => filesFlood(t))) : notStarted<Awaited<ReturnType<typeof filesFlood>>>();
  const namesFlooded = hostTierRows ? settle(filesFlooded.then(() => egressFlood(t, 'distinct'))) : notStarted<Awaited<ReturnType<typeof egressFlood>>>();
  const denialsFlooded = hostTierRows ? settle(namesFlooded.then(() => egressFlood(t, 'identical'))) : notStarted<Awaited<ReturnType<typeof egressFlood>>>();
  return { probed, git, store, storeControl, pinControl, timedOut, planted, names, killedAlone, killedWithSentinel, committedThenKilled, committedThenLauncherKilled, diskFilled, bombed, filesFlooded, namesFlooded, denialsFlooded };
}

// The suite's sessions, started at once and each awaited by its own tests: the probe session
// with the other session beside it, one session per git-to-host path and per attack on the
// session's git store, --timeout beside them; then the launcher kills (two after a commit), --disk
// and, alone at the end, the fork bomb (it would skew timings) and the floods, one after another.
import { readFileSync, statSync } from 'node:fs';
import { chmod, copyFile, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Teardown } from '@agent-sandbox/testkit';
import { parseMountinfo, runtimeMounts } from '../session.js';
import { globalSysctls, readSysctl } from './attempts-kernel.js';
import { gitPaths, hostEverydayGit, plantScript, prepareGitSession, type GitKind, type GitPath } from './git-attacks.js';
import { killAfterCommit, storeAttack, storeAttacks, wipeWithSharedObjects } from './git-store-attacks.js';
import { wipeWithAndWithoutPin } from './git-store-controls.js';
import type { Targets } from './host-targets.js';
import { egressFlood, filesFlood } from './floods.js';
import { diskSession, forkBombSession, killLauncher, timeoutSession } from './lifecycle.js';
import { plantCases, plantModes, plantSession } from './planted-links.js';
import { namesSession } from './terminal-names.js';
import type { ProbeCtx } from './probe-context.js';
import { probeScript, type Attempt } from './probe-script.js';
import {
  addWorkspace,
  chownAgent,
  containerState,
  launch,
  limiter,
  patience,
  rootful,
  sessionRoot,
  settle,
  sleep,
  waitFor,
  type SessionRoot,
  type Settled,
} from './session-kit.js';

export const pidsLimit = 256;
export const gitKinds: GitKind[] = ['linked worktree', 'plain repository'];

/** Where a host directory lies within its file system (mountinfo's root field of a bind mount of it), read from the host's mountinfo. */
function rootWithinItsFs(dir: string): string {
  const mounts = [...parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'))];
  const [point, m] = mounts
    .filter(([p]) => dir === p || dir.startsWith(p === '/' ? '/' : `${p}/`))
    .sort((a, b) => b[0].length - a[0].length)[0]!;
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
  const files = new Map(
    [path.join(ws.path, 'notes.txt'), path.join(ws.home, '.history')].map((f) => [
      f,
      [readFileSync(f, 'utf8'), statSync(f).mtimeMs] as [string, number],
    ]),
  );
  const run = launch(r, ws, `${ws.inside}/victim.sh`, []);
  const ready = await waitFor(() => {
    try {
      statSync(path.join(ws.path, '.ready'));
      return true;
    } catch {
      return false;
    }
  }, 90_000 * patience);
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
    expectedMounts: {
      ...runtimeMounts(),
      [ws.inside]: 'rw',
      '/sandbox/home': 'rw',
      '/sandbox-secrets/codex/auth.json': 'ro',
      '/run/sandbox-egress': 'ro',
    },
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

/** The session's outcome, settled, where its rows run (`on`); elsewhere a placeholder its skipped rows never await. */
function when<T>(on: boolean, start: () => Promise<T>): Promise<Settled<T>> {
  return on ? settle(start()) : notStarted<T>();
}

/** One session per git-to-host path and per attack on the session's git store, three at a time, and the store's two controls. */
function gitSessions(t: Teardown, on: boolean) {
  const gitRoot = on ? sessionRoot(t, 'git') : undefined;
  const slot = limiter(3);
  const git = new Map(
    gitRoot
      ? gitKinds.flatMap((kind) =>
          gitPaths.map(({ path: p }) => [`${kind}/${p}`, settle(slot(() => gitAttack(t, gitRoot, kind, p)))] as const),
        )
      : [],
  );
  // What a session does to its own git state (its store), and the control against shared objects.
  const storeRoot = on ? sessionRoot(t, 'store') : undefined;
  const store = new Map(
    storeRoot
      ? gitKinds.flatMap((kind) =>
          storeAttacks.map((a) => [`${kind}/${a}`, settle(slot(() => storeAttack(t, storeRoot, kind, a)))] as const),
        )
      : [],
  );
  const storeControl = when(on, async () => wipeWithSharedObjects(t, await storeRoot!));
  const pinControl = when(on, async () => wipeWithAndWithoutPin(t, await storeRoot!));
  return { git, store, storeControl, pinControl };
}

/**
 * After the first sessions: the launcher kills (two after a commit) and --disk, then alone the
 * fork bomb (it would skew timings), then the floods one at a time (each measures the launcher's
 * memory and the host's share).
 */
function laterSessions(t: Teardown, phase1: Promise<unknown>, on: boolean) {
  const killedAlone = settle(phase1.then(() => killLauncher(t, 'kill1', false)));
  const killedWithSentinel = settle(phase1.then(() => killLauncher(t, 'kill2', true)));
  const committedThenKilled = when(on, async () =>
    killAfterCommit(t, await phase1.then(() => sessionRoot(t, 'kill3')), 'linked worktree', true),
  );
  const committedThenLauncherKilled = when(on, async () =>
    killAfterCommit(t, await phase1.then(() => sessionRoot(t, 'kill4')), 'plain repository', false),
  );
  const diskFilled = settle(phase1.then(() => diskSession(t)));
  const bombed = settle(
    Promise.all([killedAlone, killedWithSentinel, committedThenKilled, committedThenLauncherKilled, diskFilled]).then(() =>
      forkBombSession(t),
    ),
  );
  const filesFlooded = when(on, () => bombed.then(() => filesFlood(t)));
  const namesFlooded = when(on, () => filesFlooded.then(() => egressFlood(t, 'distinct')));
  const denialsFlooded = when(on, () => namesFlooded.then(() => egressFlood(t, 'identical')));
  return {
    killedAlone,
    killedWithSentinel,
    committedThenKilled,
    committedThenLauncherKilled,
    diskFilled,
    bombed,
    filesFlooded,
    namesFlooded,
    denialsFlooded,
  };
}

/**
 * Starts every session; nothing here rejects (each outcome is settled for its test). With
 * `hostTierRows` false (the VM tier's guest, a rootless launcher) the sessions whose claims do
 * not depend on the cgroup version, the OCI runtime or systemd (git to the host, the git store,
 * planted links, terminal names, the floods) are not started: their rows are skipped there.
 */
export function startAll(
  t: Teardown,
  h: Targets,
  attempts: Array<Attempt<ProbeCtx>>,
  { hostTierRows = true }: { hostTierRows?: boolean } = {},
) {
  const probed = settle(probeGroup(t, h, attempts));
  const gits = gitSessions(t, hostTierRows);
  const timedOut = settle(timeoutSession(t));
  // Links planted where the launcher cleans up, and names made to drive a terminal (issue 29).
  const slot2 = limiter(2);
  const planted = new Map(
    hostTierRows
      ? plantCases.flatMap((c) => plantModes.map((m) => [`${c.label}/${m}`, settle(slot2(() => plantSession(t, c, m)))] as const))
      : [],
  );
  const names = when(hostTierRows, () => slot2(() => namesSession(t)));
  const phase1 = Promise.all([
    probed,
    timedOut,
    gits.storeControl,
    gits.pinControl,
    ...gits.git.values(),
    ...gits.store.values(),
    ...planted.values(),
    names,
  ]);
  return { probed, ...gits, timedOut, planted, names, ...laterSessions(t, phase1, hostTierRows) };
}

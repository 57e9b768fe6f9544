// The session as a whole against the host: a launcher killed with SIGKILL (alone, and with its
// sentinel), a wall-clock ceiling, a disk ceiling and a fork bomb. Each runner makes its own
// root and session and returns what the host saw; the suite's tests assert on it.
import { existsSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { scratchDirsOf, sentinelPidsOf, sessionImage, settledWithin, type Teardown } from '@agent-sandbox/testkit';
import { runPodman } from '@agent-sandbox/shared/podman';
import {
  addWorkspace,
  cidfileOf,
  containerState,
  launch,
  launcherCommand,
  ledgerLines,
  patience,
  sessionRoot,
  sleep,
  waitFor,
  type LaunchEnd,
  type SessionRoot,
  type Workspace,
} from './session-kit.js';

/** An agent that ignores SIGTERM: ending the session must not need its cooperation. */
const stubborn = ['-c', 'trap "" TERM; while :; do sleep 1; done'];

/**
 * The directory of the cgroup the container's cgroup was made in (the session's parent), read
 * from what the kernel says of the container's process, /proc/PID/cgroup: the pids hierarchy's
 * line on cgroup v1 (under /sys/fs/cgroup/pids), the one line on v2 (under /sys/fs/cgroup).
 * The container's cgroup is its libpod-* directory (crun may put the process in a child of it).
 */
export function parentCgroupDir(containerPid: number): string {
  const lines = readFileSync(`/proc/${containerPid}/cgroup`, 'utf8').split('\n').filter(Boolean);
  const v1 = lines.map((l) => /^\d+:([^:]*):(.*)$/.exec(l)).find((m) => m?.[1]?.split(',').includes('pids'));
  const [mount, cgroup] = v1 ? ['/sys/fs/cgroup/pids', v1[2]!] : ['/sys/fs/cgroup', /^0::(.*)$/m.exec(lines.join('\n'))?.[1] ?? ''];
  const parts = cgroup.split('/');
  const at = parts.findIndex((p) => p.startsWith('libpod-'));
  if (at <= 0) throw new Error(`no libpod-* cgroup in /proc/${containerPid}/cgroup: ${lines.join(' | ')}`);
  return path.join(mount, ...parts.slice(0, at));
}

async function runningSession(
  t: Teardown,
  label: string,
): Promise<{ r: SessionRoot; ws: Workspace; pid: number; done: Promise<LaunchEnd>; parentCgroup: string }> {
  const r = await sessionRoot(t, label);
  const ws = await addWorkspace(t, r, label);
  const run = launch(r, ws, '/bin/sh', stubborn);
  const up = await waitFor(async () => (await containerState(ws.container))?.running === true, 60_000 * patience, 100);
  if (!up || !run.pid) throw new Error(`the ${label} session did not start: ${JSON.stringify(await Promise.race([run.done, sleep(100)]))}`);
  const state = await containerState(ws.container);
  if (!state?.pid) throw new Error(`the ${label} session's container has no pid: ${JSON.stringify(state)}`);
  const parentCgroup = parentCgroupDir(state.pid);
  if (!existsSync(parentCgroup))
    throw new Error(`control: the ${label} session's parent cgroup ${parentCgroup} does not exist while it runs`);
  return { r, ws, pid: run.pid, done: run.done, parentCgroup };
}

/** The session's sentinel: the detached shell whose argv names this session's record. */
export function sentinelPids(ws: Workspace, root: string): number[] {
  return sentinelPidsOf(path.join(root, 'sessions', `${ws.id}.json`));
}

const stagedLeft = (r: SessionRoot, ws: Workspace) => {
  try {
    return readdirSync(path.join(r.root, 'secrets', ws.id)).length > 0;
  } catch {
    return false;
  }
};

export interface KillOutcome {
  goneAfterMs: number | undefined;
  /** In the guest: podman's own \`rm --force\` of a like container, started at the kill, timed the same way (the world's share of the bound). */
  podmanRemoveMs?: number | undefined;
  /** What of the session is still on the host after the next start: record, cidfile, parent cgroup, podman's scratch directories. */
  leftovers: string[];
  stillRunningBeforeSweep?: boolean;
  abandoned: Array<Record<string, any>>;
  linesAfterNextStart: Array<Record<string, any>>;
  stagedLeft: boolean;
  installedLeft: boolean;
  nextStart?: LaunchEnd;
}

/**
 * The control for the guest's bound: a container of the same image running the same stubborn
 * agent, started by the same user's podman beside the session; `remove()` runs podman's own
 * \`rm --force --time 0\` on it and times it until inspect no longer knows it, the way the row
 * times the session's container. Under the VM tier's CPU emulation podman's own removal takes
 * tens of seconds, and more while other sessions run: that share of the kill row's bound is
 * measured, not assumed.
 */
async function likeContainer(t: Teardown, label: string): Promise<{ remove(): Promise<number | undefined> }> {
  const name = `astest-control-${label}-${process.pid}`;
  t.teardown(() => runPodman(['rm', '--force', '--ignore', '--time', '0', name], { expect: 'any' }));
  const limits = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];
  const started = await runPodman(
    ['run', '-d', '--name', name, '--network', 'none', ...limits, '--entrypoint', '/bin/sh', sessionImage, ...stubborn],
    {
      expect: 'any',
    },
  );
  if (started.exitCode !== 0) throw new Error(`control: the like container did not start: ${started.stderr}`);
  return {
    async remove() {
      const at = Date.now();
      await runPodman(['rm', '--force', '--time', '0', name], { expect: 'any', timeoutMs: 60_000 * patience });
      return (await waitFor(async () => (await containerState(name)) === undefined, 15_000 * patience, 100)) ? Date.now() - at : undefined;
    },
  };
}

/** kill -9 of the launcher (and, when asked, of its sentinel too), then the next launcher start. */
export async function killLauncher(t: Teardown, label: string, alsoSentinel: boolean): Promise<KillOutcome> {
  const { r, ws, pid, done, parentCgroup } = await runningSession(t, label);
  const sentinels = sentinelPids(ws, r.root);
  if (sentinels.length !== 1) throw new Error(`expected one sentinel for ${ws.id}, found ${sentinels.length}`);
  const control = patience > 1 && !alsoSentinel ? await likeContainer(t, label) : undefined;
  const killedAt = Date.now();
  process.kill(pid, 'SIGKILL');
  if (alsoSentinel) process.kill(sentinels[0]!, 'SIGKILL');
  const podmanRemoved = control?.remove();
  // Not awaited yet: podman, the launcher's child, keeps its stdout open while the container runs.
  let goneAfterMs: number | undefined;
  const out: Partial<KillOutcome> = {};
  if (alsoSentinel) {
    await sleep(2000);
    out.stillRunningBeforeSweep = (await containerState(ws.container))?.running === true;
    out.nextStart = await launcherCommand(r, ws, 'plan');
    goneAfterMs = (await containerState(ws.container)) === undefined ? Date.now() - killedAt : undefined;
  } else {
    if (await waitFor(async () => (await containerState(ws.container)) === undefined, 15_000 * patience, 100))
      goneAfterMs = Date.now() - killedAt;
    await waitFor(() => ledgerLines(ws).length > 0, 20_000 * patience, 200);
  }
  if (podmanRemoved) out.podmanRemoveMs = await podmanRemoved;
  const abandoned = ledgerLines(ws).filter((l) => l['reason'] === 'abandoned');
  if (!alsoSentinel) out.nextStart = await launcherCommand(r, ws, 'plan');
  await settledWithin(done, 30_000 * patience);
  const home = path.join(r.root, 'homes', ws.id, '.codex', 'auth.json');
  const leftovers = [path.join(r.root, 'sessions', `${ws.id}.json`), cidfileOf(ws.id), parentCgroup].filter((p) => existsSync(p));
  // podman's working directories of the killed launcher and sentinel (named with their pids).
  leftovers.push(...[pid, ...(alsoSentinel ? sentinels : [])].flatMap((p) => scratchDirsOf(p).map((name) => `/tmp/${name}`)));
  return {
    ...out,
    goneAfterMs,
    leftovers,
    abandoned,
    linesAfterNextStart: ledgerLines(ws),
    stagedLeft: stagedLeft(r, ws),
    installedLeft: (() => {
      try {
        readFileSync(home);
        return true;
      } catch {
        return false;
      }
    })(),
  };
}

export interface CeilingOutcome {
  end: LaunchEnd;
  line: Record<string, any> | undefined;
  containerLeft: boolean;
  [k: string]: unknown;
}

/** --timeout 5s on an agent that sleeps for ten minutes. */
export async function timeoutSession(t: Teardown): Promise<CeilingOutcome> {
  const r = await sessionRoot(t, 'timeout');
  const ws = await addWorkspace(t, r, 'timeout');
  const end = await launch(r, ws, '/usr/bin/sleep', ['600'], ['--timeout', '5s']).done;
  return { end, line: ledgerLines(ws)[0], containerLeft: (await containerState(ws.container)) !== undefined };
}

const avail = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

/** Bytes allocated under the directories (what the session left on the host's disk). */
async function duBytes(dirs: string[]): Promise<number> {
  const out = await execa('du', ['-s', '-B1', '-c', '--', ...dirs], { env: { LC_ALL: 'C', PATH: '/usr/bin:/bin' } });
  return Number(/^(\d+)\s+total$/m.exec(String(out.stdout))?.[1]);
}

/** A writer with no end under --disk 256m; the host's free space before and after. */
export async function diskSession(
  t: Teardown,
): Promise<CeilingOutcome & { freeBefore: number; freeAfter: number; left: number; limit: number }> {
  const r = await sessionRoot(t, 'disk');
  const ws = await addWorkspace(t, r, 'disk');
  const freeBefore = avail(r.root);
  const writer = `i=0; while :; do dd if=/dev/zero of=${ws.inside}/fill-$i bs=1M count=32 status=none; i=$((i+1)); done`;
  const end = await launch(r, ws, '/bin/sh', ['-c', writer], ['--disk', '256m']).done;
  const freeAfter = avail(r.root);
  const left = await duBytes([ws.path, ws.home]);
  return {
    end,
    line: ledgerLines(ws)[0],
    containerLeft: (await containerState(ws.container)) !== undefined,
    freeBefore,
    freeAfter,
    left,
    limit: 256 * 2 ** 20,
  };
}

/** A fork bomb under --pids 64; the host forks twenty processes while it runs. */
export async function forkBombSession(t: Teardown): Promise<CeilingOutcome & { hostForks: number; bombing: boolean }> {
  const r = await sessionRoot(t, 'forkbomb');
  const ws = await addWorkspace(t, r, 'forkbomb');
  const run = launch(
    r,
    ws,
    '/usr/bin/perl',
    [`${ws.inside}/.astest/fork-bomb.pl`, String(5 * patience), `${ws.inside}/.bombing`],
    ['--pids', '64', '--memory', '1g'],
  );
  const bombing = await waitFor(
    () => {
      try {
        readFileSync(path.join(ws.path, '.bombing'));
        return true;
      } catch {
        return false;
      }
    },
    60_000 * patience,
    50,
  );
  await sleep(1000);
  const forks = await Promise.all(
    Array.from({ length: 20 }, (_, i) => execa('sh', ['-c', `echo host-fork-${i}`], { reject: false, timeout: 10_000 * patience })),
  );
  const hostForks = forks.filter((f, i) => f.exitCode === 0 && f.stdout === `host-fork-${i}`).length;
  const end = await run.done;
  return { end, line: ledgerLines(ws)[0], containerLeft: (await containerState(ws.container)) !== undefined, hostForks, bombing };
}

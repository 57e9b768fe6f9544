// Real sessions for the escape attempts, started the way a user starts one: the launcher's own
// executable (`agent-sandbox run`), a permitted root, a workspace owned by the agent uid, a host
// HOME holding a canary credential, and `--agent-bin` naming the attacker's program INSIDE the
// container. Everything made here is removed at teardown, the container included.
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { runPodman } from '@agent-sandbox/shared/podman';
import {
  agentUid,
  binPath,
  jsonLines,
  launcherFlags,
  sessionRoot as testkitRoot,
  sessionWorkspace,
  type SessionRoot as TestkitRoot,
  type SessionWorkspace,
  type Teardown,
} from '@agent-sandbox/testkit';

export { agentUid };
/** The in-session helper programs (sc.pl, net-probe.js, ...), copied into a workspace. */
export const helperDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'escape');
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/**
 * How many times longer the suite waits: 10 in the VM tier's guest (AGENT_SANDBOX_TIER=vm, set
 * by vm/guest/run-in-guest.sh), where CPU emulation makes everything 10-20 times slower, 1 on
 * the host. It widens the waits and timeouts, and the two time bounds the kill and --timeout
 * rows state (their exact bounds are proved on the host tier).
 */
export const patience = process.env['AGENT_SANDBOX_TIER'] === 'vm' ? 10 : 1;
/**
 * Root runs rootful sessions (the agent is the host's uid 1000, the workspaces handed to it);
 * any other user runs the launcher rootless (its own podman, a user namespace with keep-id, its
 * delegated cgroup): the agent is that user, who owns the workspaces already.
 */
export const rootful = process.geteuid?.() === 0;

/** testkit's session root, whose host HOME always holds the canary codex credential. */
export type SessionRoot = TestkitRoot & { credential: string };
/** testkit's session workspace: id, host path, where the session sees it, home, own ledger, container. */
export type Workspace = SessionWorkspace;

export interface LaunchEnd {
  exitCode: number;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface Launched {
  pid: number | undefined;
  done: Promise<LaunchEnd>;
}

/** Where podman-attrib puts a session's cidfile (a launcher killed with SIGKILL leaves it). */
export const cidfileOf = (id: string) => path.join(tmpdir(), `agent-sandbox-${id}.cid`);

export async function chownAgent(...paths: string[]): Promise<void> {
  await execa('chown', ['-R', `${agentUid}:${agentUid}`, ...paths]);
}

/** A permitted root with a host HOME whose codex credential is a canary (testkit's one layout). */
export async function sessionRoot(t: Teardown, label: string): Promise<SessionRoot> {
  const root = await testkitRoot(t, `escape-${label}`);
  return { ...root, credential: root.credential! };
}

const helpers = ['sc.pl', 'net-probe.js', 'keys.pl', 'kill-all.pl', 'fork-bomb.pl', 'files-flood.js', 'egress-flood.js'];

/** <root>/workspaces/astest-<label>-<hex>, owned by the agent uid, with the helpers in .astest/. */
export async function addWorkspace(
  t: Teardown,
  r: SessionRoot,
  label: string,
  files: Record<string, string> = {},
  prepare?: (wsPath: string) => Promise<void>,
): Promise<Workspace> {
  const copy = Object.fromEntries(helpers.map((name) => [`.astest/${name}`, path.join(helperDir, name)]));
  const ws = await sessionWorkspace(t, r, label, { files, copy, ...(prepare ? { prepare } : {}) });
  t.teardown(() => rm(cidfileOf(ws.id), { force: true }));
  return ws;
}

/** codex unless `extra` names a runtime. */
export function sessionFlags(r: SessionRoot, ws: Workspace, extra: string[] = []): string[] {
  return launcherFlags(r, ws, extra);
}

export function launcherEnv(r: SessionRoot): Record<string, string> {
  return r.env;
}

/** `agent-sandbox run ... --agent-bin BIN -- ARGS`; never rejects. */
export function launch(
  r: SessionRoot,
  ws: Workspace,
  agentBin: string,
  agentArgs: string[],
  extra: string[] = [],
  timeoutMs = 180_000 * patience,
): Launched {
  const started = Date.now();
  const child = execa(binPath('agent-sandbox'), ['run', ...sessionFlags(r, ws, extra), '--agent-bin', agentBin, '--', ...agentArgs], {
    env: launcherEnv(r),
    extendEnv: false,
    reject: false,
    timeout: timeoutMs,
    stdin: 'ignore',
  });
  const done = child.then((out) => ({
    exitCode: typeof out.exitCode === 'number' ? out.exitCode : -1,
    stdout: String(out.stdout),
    stderr: String(out.stderr),
    ms: Date.now() - started,
  }));
  return { pid: child.pid, done };
}

/** Another launcher command on the same root (plan: the "next launcher start"). */
export async function launcherCommand(r: SessionRoot, ws: Workspace, command: string, extra: string[] = []): Promise<LaunchEnd> {
  const started = Date.now();
  const out = await execa(binPath('agent-sandbox'), [command, ...sessionFlags(r, ws, extra), '--agent-bin', '/bin/true'], {
    env: launcherEnv(r),
    extendEnv: false,
    reject: false,
    timeout: 120_000 * patience,
  });
  return { exitCode: out.exitCode ?? -1, stdout: String(out.stdout), stderr: String(out.stderr), ms: Date.now() - started };
}

export function ledgerLines(ws: Workspace): Array<Record<string, any>> {
  return jsonLines(ws.ledger);
}

export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 100): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > until) return false;
    await sleep(stepMs);
  }
}

export async function containerState(name: string): Promise<{ running: boolean; pid: number } | undefined> {
  const out = await runPodman(['container', 'inspect', '--format', '{{.State.Running}} {{.State.Pid}}', name], { expect: 'any' });
  if (out.exitCode !== 0) return undefined;
  const [running, pid] = out.stdout.trim().split(' ');
  return { running: running === 'true', pid: Number(pid) };
}

/** A promise's outcome as a value: the runners start at once and a test awaits its own later. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: string };
export function settle<T>(p: Promise<T>): Promise<Settled<T>> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => ({ ok: false as const, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
}

/** Runs the tasks at most `n` at a time (two CPUs, other suites running too). */
export function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: Array<() => void> = [];
  const next = () => {
    if (active >= n) return;
    const run = queue.shift();
    if (run) {
      active += 1;
      run();
    }
  };
  return <T>(task: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push(() =>
        task()
          .then(resolve, reject)
          .finally(() => {
            active -= 1;
            next();
          }),
      );
      next();
    });
}

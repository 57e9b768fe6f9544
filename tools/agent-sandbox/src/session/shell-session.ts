/**
 * `agent-sandbox shell`'s core: one process inside a running session, through `podman exec`
 * into its container, as the agent's user. It is in the container's namespaces and cgroup, so
 * inside every ceiling of the session and ended with it; it gets the container's own environment
 * (podman exec adds none of the caller's: podman itself runs with an allowlisted environment),
 * the container's capabilities (none) and its NoNewPrivs and seccomp profile, and no credential
 * the session does not have. One exception is the kernel's: pids.max is checked on fork and
 * clone only, and joining a cgroup is neither, so the joining process can take pids.current one
 * past pids.max (a session at its ceiling still gets the shell; the shell's own forks are then
 * refused). Before it starts, a note (who, when, what) is appended to the session's shells file,
 * which its launcher puts in the session's ledger line (session/live.ts).
 */
import { appendFileSync, statSync } from 'node:fs';
import os from 'node:os';
import { agentUser, containerWorkspace, entrypointLogEnvName } from '@agent-sandbox/shared/container-layout';
import { podmanEnv, spawnPodmanAttached } from '@agent-sandbox/shared/podman';
import { requireRunning } from '../workspace/running.js';
import { shellNotesMaxBytes, shellsFileOf, type ShellNote } from './live.js';

/** The login shell when no command is given: bash where the image has it, sh otherwise. */
export const defaultShell = ['/bin/sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi'];

/**
 * podman exec's argv for a command inside the container, as the agent, with a terminal when the
 * caller has one. exec gets the container's configured environment; the entrypoint took one
 * name of it away from the agent (where its own lines go), so `env -u` takes it from the shell too.
 */
export function shellArgs(container: string, sessionId: string, command: string[], tty: boolean): string[] {
  const tail = command.length > 0 ? command : defaultShell;
  return [
    'exec',
    '--interactive',
    ...(tty ? ['--tty'] : []),
    '--user',
    agentUser,
    '--workdir',
    containerWorkspace(sessionId),
    container,
    'env',
    '-u',
    entrypointLogEnvName,
    '--',
    ...tail,
  ];
}

function noteShell(file: string, note: ShellNote): void {
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    size = 0;
  }
  if (size < shellNotesMaxBytes) appendFileSync(file, `${JSON.stringify(note)}\n`, { mode: 0o600 });
}

/** Runs the command (or a login shell) in the session; resolves with its exit status, unchanged (podman's own 125-127 when exec itself failed). */
export async function shellSession(options: {
  root: string;
  workspace: string;
  command: string[];
  tty: boolean;
  env: NodeJS.ProcessEnv;
  /** The command's input when it is not this process's stdin (a node's receiver: the ssh channel after the request). */
  feedStdin?: (stdin: NodeJS.WritableStream) => void;
}): Promise<number> {
  const { layout, record } = requireRunning(options.root, options.workspace, 'shell');
  const user = os.userInfo();
  noteShell(shellsFileOf(layout), {
    at: new Date().toISOString(),
    by: user.username,
    uid: user.uid,
    command: options.command.slice(0, 20),
    tty: options.tty,
  });
  const stdio = options.feedStdin ? (['pipe', 'inherit', 'inherit'] as const) : 'inherit';
  const status = await spawnPodmanAttached(shellArgs(record.containerName, layout.sessionId, options.command, options.tty), {
    stdio,
    env: podmanEnv(options.env),
    ...(options.feedStdin ? { feedStdin: options.feedStdin } : {}),
  });
  return status < 0 ? 125 : status;
}

/**
 * `execWithHandoff(argv, deps)`: run a command so that rootless podman works.
 * NoNewPrivs 0: run it directly. NoNewPrivs 1: preflight the user manager (84 when
 * not ready, naming `loginctl enable-linger`), then hand off through
 * `systemd-run --user` and map the exit exactly: the command's own status passes
 * through; systemd-run failing itself is 89. Inside our own handoff unit with
 * NoNewPrivs still 1, another handoff could not help and would nest forever: 90.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { realDeps, type NnpDeps } from './deps.js';
import { buildHandoffArgv, handoffPath } from './handoff-argv.js';
import { newUnitName } from './handoff-unit.js';
import { measure, statusFileFor, systemdAndUserManager } from './probe.js';
import { runChild, type ChildEnd } from './run-child.js';

/**
 * True when we are in the foreground process group of our controlling terminal:
 * a SIGINT then came from the terminal and already reached a child in our group,
 * so forwarding it again would deliver it twice (an agent's "press ^C again" would
 * see two). Fields after the ")" of /proc/self/stat: state ppid pgrp session tty_nr tpgid.
 */
export async function inTerminalForeground(deps: NnpDeps): Promise<boolean> {
  try {
    const stat = await deps.readFile('/proc/self/stat');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [pgrp, ttyNr, tpgid] = [Number(fields[2]), Number(fields[4]), Number(fields[5])];
    return ttyNr !== 0 && tpgid === pgrp;
  } catch {
    return false;
  }
}

/** NoNewPrivs 0: the command runs here, in our process group, with our environment. */
export async function runDirect(argv: string[], deps: NnpDeps): Promise<number> {
  const [file, ...args] = argv as [string, ...string[]];
  const end = await runChild(deps, file, args, {
    env: deps.env,
    cwd: deps.cwd,
    detached: false,
    forward: async (signal, child) => {
      if (signal === 'SIGINT' && (await inTerminalForeground(deps))) return;
      child.kill(signal);
    },
  });
  if (end.spawnError) deps.log(`nnp-probe: cannot run ${file}: ${end.spawnError}`);
  return end.status;
}

function describeEnd(end: ChildEnd): string {
  if (end.spawnError) return `could not be started (${end.spawnError})`;
  return end.signal ? `was killed by ${end.signal}` : `exited ${end.code}`;
}

/** Reads the wrapper's status file: an integer 0..255, else null. */
async function readStatus(file: string): Promise<number | null> {
  try {
    const text = await readFile(file, 'utf8');
    if (!/^\d{1,3}\n?$/.test(text)) return null;
    const status = Number(text.trim());
    return status <= 255 ? status : null;
  } catch {
    return null;
  }
}

/** NoNewPrivs 1 and the preflight passed: the handoff, with exact exit mapping. */
export async function runHandoff(argv: string[], systemdVersion: number | null, deps: NnpDeps): Promise<number> {
  const unit = newUnitName();
  const statusFile = statusFileFor(deps, unit);
  const handoff = buildHandoffArgv({ systemdVersion, unit, path: handoffPath(deps.env), home: deps.home, statusFile, command: argv });
  try {
    await mkdir(dirname(statusFile), { mode: 0o700 });
  } catch (err) {
    throw new ToolError(
      'systemdRun',
      'status-dir-failed',
      `cannot create ${dirname(statusFile)} for the handoff status: ${(err as Error).message}`,
    );
  }
  try {
    const end = await runChild(deps, handoff[0] as string, handoff.slice(1), {
      env: deps.env,
      cwd: deps.cwd,
      // Own process group: a terminal ^C reaches only us; we deliver it to the unit.
      detached: true,
      forward: async (signal, child) => {
        const kill = await deps.query('systemctl', ['--user', 'kill', `--signal=${signal}`, '--kill-whom=all', unit], deps.env);
        // The unit is not there yet (or is gone): stop systemd-run, which stops what it started.
        if (kill.exitCode !== 0) child.kill(signal);
      },
    });
    const status = await readStatus(statusFile);
    if (status !== null) {
      if (end.code !== status)
        deps.log(`nnp-probe: systemd-run ${describeEnd(end)}; the contained command's own status ${status} is passed through`);
      return status;
    }
    throw new ToolError(
      'systemdRun',
      'systemd-run-failed',
      `systemd-run ${describeEnd(end)}${end.forwarded ? ` after ${end.forwarded}` : ''} and the contained command left no exit status: the handoff itself failed (systemd-run's own message, if any, is above on stderr)`,
      { systemdRunExit: end.code, systemdRunSignal: end.signal, unit },
    );
  } finally {
    await rm(dirname(statusFile), { recursive: true, force: true });
  }
}

/** The decision, from the measurement. Returns the exit status to exit with. */
export async function execWithHandoff(argv: string[], deps: NnpDeps = realDeps()): Promise<number> {
  if (argv.length === 0 || argv[0] === '') {
    throw new ToolError('usage', 'no-command', 'exec: name a command after -- (nnp-probe exec -- CMD...)');
  }
  const { noNewPrivs, insideHandoff } = await measure(deps);
  if (!noNewPrivs) return runDirect(argv, deps);
  if (insideHandoff !== null) {
    throw new ToolError(
      'policy',
      'handoff-recursion',
      `already inside the handoff unit ${insideHandoff} and NoNewPrivs is still 1: another systemd-run handoff would not clear it and would nest again`,
      { unit: insideHandoff },
    );
  }
  const { systemdVersion, userManager: report } = await systemdAndUserManager(deps);
  if (!report.ready) {
    throw new ToolError(
      'userManager',
      'user-manager-missing',
      `NoNewPrivs is 1, so rootless podman needs a systemd-run --user handoff, but the user manager is not ready: ${report.problems.join('; ')}. Remedy: loginctl enable-linger ${report.user} (then the user manager starts and ${report.runtimeDir.path}/bus appears)`,
      { problems: report.problems },
    );
  }
  return runHandoff(argv, systemdVersion, deps);
}

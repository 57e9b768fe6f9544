/**
 * The hatch, start to end: refuse unless a human at a terminal on the host
 * with no agent above typed it; resolve the agent CLI; pick the limits; show
 * the banner; run the agent and return its exit status unchanged.
 * Nothing else reaches this code: no other tool calls it and no variable or
 * flag of the containerized path leads here.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { constants } from 'node:os';
import { execFileSync, spawn } from 'node:child_process';
import { ToolError } from '@agent-sandbox/shared';
import type { AgentUnsafePlan } from '@agent-sandbox/shared/schemas/agent-unsafe';
import { bannerLines } from './banner.js';
import { realHost, type HostView } from './host-view.js';
import {
  countProcessesOf,
  defaultLimits,
  parseSystemdVersion,
  planLimits,
  userManagerSocket,
  whichOnPath,
  type LimitDeps,
  type LimitRequest,
} from './limits.js';
import { enforcePolicy } from './policy.js';
import { ownProgramNames, runtimes, type Runtime } from './runtimes.js';

export interface HatchRequest {
  runtime: Runtime;
  /** Arguments for the agent CLI (after `--`). */
  args: string[];
  /** Check and plan, print the plan, start nothing. */
  dryRun?: boolean;
  limits?: Partial<LimitRequest>;
}

export interface HatchDeps {
  env: NodeJS.ProcessEnv;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  host: HostView;
  parentPid: number;
  limitDeps: LimitDeps;
  log(line: string): void;
  /** Runs argv with the terminal attached; resolves to its exit status (128+n for a signal). */
  launch(argv: string[], env: NodeJS.ProcessEnv): Promise<number>;
}

export interface HatchResult {
  /** The plan (dry run) or undefined: the agent owned stdout. */
  output?: AgentUnsafePlan;
  exitCode: number;
}

/** The agent CLI on PATH; never this tool or its wrappers (a hatch in a loop). */
export function resolveAgentBinary(runtime: Runtime, which: (name: string) => string | undefined): string {
  const program = runtimes[runtime].program;
  const found = which(program);
  if (!found) {
    throw new ToolError('usage', 'agent-cli-not-found', `${program}: not found on PATH; install the ${runtime} CLI first`);
  }
  let real = found;
  try {
    real = realpathSync(found);
  } catch {
    // keep the PATH entry
  }
  if (ownProgramNames.includes(path.basename(real))) {
    throw new ToolError('policy', 'hatch-loop', `${program} on PATH (${found}) is agent-unsafe itself; refusing to loop`);
  }
  return found;
}

export async function openHatch(request: HatchRequest, deps: HatchDeps): Promise<HatchResult> {
  enforcePolicy({
    stdinIsTTY: deps.stdinIsTTY,
    stdoutIsTTY: deps.stdoutIsTTY,
    env: deps.env,
    host: deps.host,
    parentPid: deps.parentPid,
  });
  const binary = resolveAgentBinary(request.runtime, deps.limitDeps.which);
  const limits: LimitRequest = { ...defaultLimits, ...request.limits };
  const plan = planLimits(binary, request.args, limits, deps.limitDeps);
  if (!plan) {
    throw new ToolError(
      'limits',
      'no-limit-mechanism',
      'limits cannot be enforced: no systemd user manager and no prlimit on PATH (util-linux)',
    );
  }
  const output: AgentUnsafePlan = {
    ok: true,
    runtime: request.runtime,
    binary,
    mechanism: plan.mechanism,
    argv: plan.argv,
    limits: plan.limits,
  };
  if (request.dryRun) return { output, exitCode: 0 };
  for (const line of bannerLines(request.runtime, binary, plan)) deps.log(line);
  const exitCode = await deps.launch(plan.argv, { ...deps.env, AGENT_UNSAFE_SESSION: request.runtime });
  return { exitCode };
}

/**
 * Starts argv with stdio inherited and waits. The terminal delivers ^C and ^\ to
 * the agent itself (same process group), so we ignore them while it runs;
 * SIGTERM and SIGHUP sent to us are passed on.
 */
export function launchAttached(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [file, ...args] = argv;
  if (!file) return Promise.reject(new Error('empty argv'));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: 'inherit', env });
    const ignore = () => {};
    const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
    const onTerm = forward('SIGTERM');
    const onHup = forward('SIGHUP');
    process.on('SIGINT', ignore);
    process.on('SIGQUIT', ignore);
    process.on('SIGTERM', onTerm);
    process.on('SIGHUP', onHup);
    const done = () => {
      process.off('SIGINT', ignore);
      process.off('SIGQUIT', ignore);
      process.off('SIGTERM', onTerm);
      process.off('SIGHUP', onHup);
    };
    child.on('error', (err) => {
      done();
      reject(
        new ToolError('startFailed', 'launch-failed', `${file}: could not start (${(err as NodeJS.ErrnoException).code ?? err.message})`),
      );
    });
    child.on('exit', (code, signal) => {
      done();
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}

/** The real host: /proc, PATH, the user manager's socket, prlimit. */
export function realLimitDeps(env: NodeJS.ProcessEnv): LimitDeps {
  return {
    uid: process.getuid?.() ?? 0,
    which: (name) => whichOnPath(name, env['PATH']),
    userManagerPresent: (uid) => realHost.exists(userManagerSocket(uid)),
    systemdVersion: (systemdRun) => {
      try {
        return parseSystemdVersion(execFileSync(systemdRun, ['--version'], { encoding: 'utf8', timeout: 5000 }));
      } catch {
        return undefined;
      }
    },
    countUserProcesses: (uid) => countProcessesOf(uid),
  };
}

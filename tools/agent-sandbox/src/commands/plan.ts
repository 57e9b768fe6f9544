/**
 * `plan`: the session plan as a run would compose it, as one JSON document: steps 1-3, 5 and 7
 * of launch.ts by the same functions (planSession), so what it prints is what a run does; it
 * holds, stages and starts nothing.
 */
import type { CommandSpec } from '@agent-sandbox/shared';
import { planSession } from '../launch.js';
import { caRecord } from '../egress/ca-file.js';
import type { PreparedSession } from '../session/prepare.js';
import { launchIo, type Entry } from './entry.js';
import { parseRequest, sessionOptions } from './session-flags.js';

/** The plan's document: who the session is (no run id or start: nothing ran), its mounts, network, command and podman argv. */
export function planOutput({ plan }: PreparedSession) {
  const { runId: _runId, startedAt: _startedAt, ...identity } = plan.identity;
  return {
    ok: true,
    ...identity,
    workspace: plan.layout.workspace,
    root: plan.layout.root,
    credentials: { identity: plan.credentials.identity, mounts: plan.credentials.mounts, install: plan.credentials.install },
    mounts: plan.allMounts,
    workdir: plan.mounts.workdir,
    git: plan.mounts.git,
    egress: { mode: plan.egress.mode, allow: plan.egress.allow, ...(plan.egress.ca ? { ca: caRecord(plan.egress.ca) } : {}) },
    command: plan.runPlan.command,
    runPlan: plan.runPlan,
    argv: plan.argv,
    // The values behind the launcher's own names in runPlan.env (git's safe.directory): not secrets.
    containerEnv: plan.containerEnv,
  };
}

export function planCommand(entry: Entry): CommandSpec {
  return {
    name: 'plan',
    describe: 'print the composed session plan (JSON): the steps a run takes up to acquiring anything; stages and runs nothing',
    options: sessionOptions,
    takesCommand: true,
    run: async (_i, ctx) => {
      const request = parseRequest('run', ctx.options, ctx.rest, ctx.env, entry.argv);
      return { output: planOutput(await planSession(request, launchIo(entry, ctx, request.verbose))) };
    },
  };
}

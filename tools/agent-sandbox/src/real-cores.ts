/**
 * The launcher-side adapter: binds the Cores verbs to the tools' library exports, so one
 * process does what five executables would. Argument shapes are translated here and only
 * here; the tools themselves are not changed.
 */
import { planCredentials, stageCredentials, unstageCredentials } from '@agent-sandbox/cred-stage';
import { execWithHandoff, probe, realDeps } from '@agent-sandbox/nnp-probe';
import { attributeEnd, prepareAttribution, startSampler, type Attribution as Prepared } from '@agent-sandbox/podman-attrib';
import { planMounts } from '@agent-sandbox/mount-plan';
import { buildRunArgv, preflight, runPlan } from '@agent-sandbox/sandbox-run';
import type { RunPlan as SandboxRunPlan } from '@agent-sandbox/shared/schemas/sandbox-run';
import type { Attribution, Cores, CredentialPlan, MountPlan, RunOutcome, RunPlan } from './cores.js';

export function realCores(): Cores {
  return {
    async planCredentials(input, env) {
      return (await planCredentials(input, { env })) as unknown as CredentialPlan;
    },
    async stageCredentials(input, env) {
      return (await stageCredentials(input, { env })) as unknown as CredentialPlan;
    },
    async unstageCredentials(stageDir) {
      await unstageCredentials(stageDir);
    },
    async planMounts(input) {
      return (await planMounts(input as Parameters<typeof planMounts>[0])) as unknown as MountPlan;
    },
    async probe() {
      return await probe(realDeps());
    },
    async execWithHandoff(argv) {
      return await execWithHandoff(argv, realDeps());
    },
    async buildRunArgv(plan) {
      const p = plan as unknown as SandboxRunPlan;
      return buildRunArgv(p, await preflight(p, { checkImage: false }));
    },
    async runPlan(plan: RunPlan, hooks) {
      const outcome = await runPlan(plan as unknown as SandboxRunPlan, {
        stdio: hooks.stdio as never,
        ...(hooks.env ? { env: hooks.env } : {}),
        ...(hooks.beforeRemove ? { beforeRemove: hooks.beforeRemove } : {}),
        ...(hooks.log ? { log: hooks.log } : {}),
      });
      return outcome as RunOutcome;
    },
    async prepareAttribution({ sessionId }) {
      const prepared = prepareAttribution({ sessionId });
      return { cgroupParent: prepared.cgroupParent, cidfile: prepared.cidfile, cleanup: () => prepared.cleanup(), handle: prepared };
    },
    async startSampler(prepared) {
      const handle = prepared.handle as Prepared;
      const sampler = startSampler({ layout: handle.layout });
      let peak: Promise<Attribution['peak']> | undefined;
      return { stop: () => (peak ??= sampler.stop()) };
    },
    async attributeEnd({ prepared, ...rest }) {
      const out = attributeEnd({ ...rest, prepared: prepared.handle as Prepared });
      return { exitCode: out.exitCode, reason: out.reason, evidence: out.evidence as unknown as Record<string, unknown>, peak: out.peak };
    },
  };
}

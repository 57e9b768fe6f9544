/**
 * The launcher-side adapter: binds the Cores verbs to the tools' library exports, so one
 * process does what five executables would. Argument shapes are translated here and only
 * here; the tools themselves are not changed.
 */
import { planCredentials, stageCredentials, unstageCredentials } from '@agent-sandbox/cred-stage';
import { execWithHandoff, probe, realDeps } from '@agent-sandbox/nnp-probe';
import { attributeEnd, prepareAttribution, startSampler, type Attribution as Prepared } from '@agent-sandbox/podman-attrib';
import type { Attribution, Cores, CredentialPlan, MountPlan, RunOutcome, RunPlan } from './cores.js';

type Loose = Record<string, any>;

/** Loads a core that may not be linked yet; a missing core is a bug of the install (91). */
async function load(name: string): Promise<Loose> {
  const spec = `@agent-sandbox/${name}`;
  return (await import(spec)) as Loose;
}

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
      const core = await load('mount-plan');
      return (await core['planMounts'](input)) as MountPlan;
    },
    async probe() {
      return await probe(realDeps());
    },
    async execWithHandoff(argv) {
      return await execWithHandoff(argv, realDeps());
    },
    async buildRunArgv(plan) {
      const core = await load('sandbox-run');
      const out = await core['buildRunArgv'](plan);
      return Array.isArray(out) ? out : (out as { argv: string[] }).argv;
    },
    async runPlan(plan: RunPlan, hooks) {
      const core = await load('sandbox-run');
      return (await core['runPlan'](plan, hooks)) as RunOutcome;
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

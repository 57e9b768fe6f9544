/**
 * What a session holds on the host while it runs, taken in order and given back in reverse on
 * every path: the staged credential copy, the session home's installed copies, the git-dir
 * store (mount-plan: everything git writes inside goes there; its branch comes home after), the
 * layers over the host caches (--cache), the
 * egress broker (the session's only way out), the parent cgroup. A refusal at any step after staging leaves nothing. (The lock, the record and the
 * sentinel are the launcher's: they outlive these, until the ledger line is written.)
 */
import path from 'node:path';
import { removeBeneath } from '@agent-sandbox/shared/beneath';
import { forTerminal } from '@agent-sandbox/shared/terminal-text';
import { prepareAttribution, untilParentEmpty, type Attribution } from '@agent-sandbox/podman-attrib';
import { stageCredentials } from '@agent-sandbox/cred-stage';
import type { CredStageStageInput } from '@agent-sandbox/shared/schemas/cred-stage';
import type { MountEntry, MountPlanOutput } from '@agent-sandbox/shared/schemas/mount-plan';
import { startGitSession, type GitSession } from '../git/audit.js';
import { startEgress, type EgressPlan, type RunningEgress } from '../egress/broker.js';
import { stageCaFile } from '../egress/ca-file.js';
import { startPublish, type PublishPlan, type RunningPublish } from '../egress/publish.js';
import { quarantineDirOf, type SessionLayout } from '../workspace/layout.js';
import { reach, type FaultHooks } from './faults.js';
import { prepareHome, scrubHome, type PlantedLink } from '../workspace/home.js';
import { prepareCacheLayers, removeCacheLayers } from './caches.js';

export interface Acquired {
  prepared: Attribution;
  publish: RunningPublish;
  git: GitSession;
  egress: RunningEgress;
  /** Links the session planted on the home's clean-up paths, removed as links: filled by release(). */
  planted: PlantedLink[];
  /** Gives back what was taken, in reverse order; idempotent, never throws. */
  release(): Promise<void>;
}

export interface AcquireInput {
  layout: SessionLayout;
  /** cred-stage's input for this session (the one the preflight planned with). */
  stageInput: CredStageStageInput;
  /** Host paths of the copies the container will install in the home. */
  installed: string[];
  /** mount-plan's plan: its git store is made here and finished (the branch brought home) on release. */
  mounts: MountPlanOutput;
  /** The session's --disk in bytes: no index larger than this comes back from its store. */
  diskBytes?: number;
  /** The session's network: its broker is started here and stopped on release. */
  egress: EgressPlan;
  /** The host ports carried into the container: taken first (a taken one refuses before anything exists). */
  publish: PublishPlan;
  /** Every mount of the container: the layers of its overlay mounts (--cache) are made here and removed on release. */
  allMounts?: MountEntry[];
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  faults?: FaultHooks;
  /** Called with the parent cgroup once it exists (the launcher records it). */
  onParent?: (cgroupParent: string, cidfile: string) => void;
}

/**
 * What the container reads at its start, made the same way for a podman session (acquire) and a
 * Pod (kube): the credential copy, --ca-file's checked bytes beside it (removed with the stage
 * dir), and the session home, owned by the agent.
 */
export async function stageSessionFiles(
  layout: SessionLayout,
  stageInput: CredStageStageInput,
  egress: Pick<EgressPlan, 'ca'>,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  await stageCredentials(stageInput, { env });
  if (egress.ca) await stageCaFile(egress.ca);
  prepareHome(layout.home, process.geteuid?.() ?? 0);
}

export async function acquire(input: AcquireInput): Promise<Acquired> {
  const { layout } = input;
  const undo: (() => unknown)[] = [];
  const planted: PlantedLink[] = [];
  const release = async () => {
    while (undo.length > 0) {
      try {
        await undo.pop()!();
      } catch (err) {
        input.log(`agent-sandbox: cleanup: ${forTerminal((err as Error).message)}`);
      }
    }
  };
  try {
    const publish = await startPublish(input.publish);
    undo.push(() => publish.stop());
    await reach(input.faults, 'staging');
    // Beneath <root>/secrets, never through a link (it is mounted read-only, so none is expected).
    undo.push(() => removeBeneath(path.dirname(layout.stageDir), layout.stageDir));
    await stageSessionFiles(layout, input.stageInput, input.egress, input.env);
    undo.push(() => planted.push(...scrubHome(layout.home, input.installed)));
    await reach(input.faults, 'staged');
    // The caches' layers: empty, beneath <root>/cache-layers; what the session wrote there goes after it.
    if (input.allMounts?.some((m) => m.overlay)) {
      undo.push(() => removeCacheLayers(layout.cacheLayerDir));
      prepareCacheLayers(layout.cacheLayerDir, input.allMounts);
    }
    const git = await startGitSession(input.mounts, layout.workspace, layout.sessionId, input.log, {
      quarantineRoot: quarantineDirOf(layout.root, layout.sessionId),
      ...(input.diskBytes ? { diskBytes: input.diskBytes } : {}),
    });
    undo.push(() => git.finish());
    const egress = await startEgress(input.egress, layout.sessionId);
    undo.push(() => egress.stop());
    const prepared = prepareAttribution({ sessionId: layout.sessionId });
    // conmon and podman's own clean-up leave the parent after podman run returned; under load
    // that takes seconds, so the parent is removed once they are out.
    undo.push(async () => {
      await untilParentEmpty(prepared.layout);
      prepared.cleanup();
    });
    input.onParent?.(prepared.cgroupParent, prepared.cidfile);
    await git.ready();
    return { prepared, publish, git, egress, planted, release };
  } catch (err) {
    await release();
    throw err;
  }
}

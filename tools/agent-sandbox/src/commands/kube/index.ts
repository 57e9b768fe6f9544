/**
 * `kube`: the same plan as a run (planSession, containment "kube") as Kubernetes objects: the
 * Pod, a deny-all NetworkPolicy and the node broker's ConfigMap (manifest.ts). Like a run (with
 * acquire's own staging, session/acquire.ts), it stages the credential copy (<root>/secrets/<id>, owned by uid 1000, which the hostPath volume
 * names) and the --ca-file copy, hands the session home to uid 1000, makes the git-dir view and
 * the broker's socket directory, so the manifest runs as printed once the node's broker listens
 * there; when the pod has ended, remove <root>/secrets/<id> and the socket directory; the next
 * session in the workspace brings the pod's branch home from <root>/git-stores/<id> before it
 * starts. On a cluster the credential would be a Secret. A workspace with a running session is
 * refused (92) before anything is staged.
 */
import { ToolError, type CommandSpec } from '@agent-sandbox/shared';
import { prepareGitStore } from '@agent-sandbox/mount-plan';
import { planSession } from '../../launch.js';
import { brokerConfig, makeSocketDir } from '../../egress/broker.js';
import { podEnv } from '../../session/compose.js';
import type { LaunchIo } from '../../session/launch-io.js';
import type { LaunchRequest } from '../../session/request.js';
import { stageSessionFiles } from '../../session/acquire.js';
import { lockWorkspace } from '../../workspace/lock.js';
import { launchIo, type Entry } from '../entry.js';
import { parseRequest, sessionOptions } from '../session-flags.js';
import { kubeManifest } from './manifest.js';

export async function kubeObjects(request: LaunchRequest, io: LaunchIo) {
  if (request.network !== 'none') {
    throw new ToolError(
      'usage',
      'bad-flag',
      `--network: a Pod has no podman network namespace to join; kube takes only "none", got ${JSON.stringify(request.network)}`,
    );
  }
  if (request.publish.length > 0) {
    throw new ToolError(
      'usage',
      'bad-flag',
      '--publish: the launcher carries published ports itself; a Pod has no launcher beside it (use kubectl port-forward)',
    );
  }
  if (request.caches?.length) {
    throw new ToolError(
      'usage',
      'bad-flag',
      `--cache: a Pod has no private layer over a host directory (podman's :O); caches are for podman sessions on this machine, got ${request.caches.join(',')}`,
    );
  }
  // The config's default caches are for podman sessions: a Pod gets none.
  const { plan, stageInput } = await planSession({ ...request, caches: [] }, io, 'kube');
  const lock = lockWorkspace(plan.layout.lockFile, plan.layout.recordFile, plan.layout.sessionId);
  try {
    await stageSessionFiles(plan.layout, stageInput, plan.egress, io.env);
    if (plan.mounts.gitStore) prepareGitStore(plan.mounts.gitStore, plan.layout.sessionId);
    if (plan.egress.socketDir) makeSocketDir(plan.egress.socketDir);
  } finally {
    lock.release();
  }
  const broker = brokerConfig(plan.egress, plan.layout.sessionId);
  return kubeManifest({
    sessionId: plan.layout.sessionId,
    ...(broker ? { broker } : {}),
    image: plan.identity.image,
    command: plan.runPlan.command ?? [],
    workdir: plan.mounts.workdir,
    mounts: plan.allMounts,
    limits: plan.identity.limits,
    env: podEnv(plan),
  });
}

export function kubeCommand(entry: Entry): CommandSpec {
  return {
    name: 'kube',
    describe:
      "print the session plan as Kubernetes objects: a List of the Pod, a deny-all NetworkPolicy and the node broker's ConfigMap (JSON, which is YAML)",
    options: sessionOptions,
    takesCommand: true,
    run: async (_i, ctx) => {
      const request = parseRequest('run', ctx.options, ctx.rest, ctx.env, entry.argv);
      return { output: await kubeObjects(request, launchIo(entry, ctx, request.verbose)) };
    },
  };
}

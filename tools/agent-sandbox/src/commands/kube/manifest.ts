/**
 * `agent-sandbox kube`: the same session plan as Kubernetes objects, one `List`: the Pod (the
 * unit a k3s scheduler runs), a NetworkPolicy that denies the Pod all ingress and egress, and,
 * with the default egress, a ConfigMap holding the broker's config for the node.
 *
 * Egress on a cluster: the Pod's only way out is the node's broker (tools/egress-proxy), as in
 * a local session: its unix socket in the hostPath /run/agent-sandbox/egress/<id>, mounted
 * read-only at /run/sandbox-egress, the relay in front of the agent, the proxy variables by
 * name. A Pod has a network interface, so the NetworkPolicy is what makes the socket the only
 * way out: with it the agent cannot bypass the broker (a sidecar broker could not work: a
 * NetworkPolicy applies to the whole Pod, so a policy that let a sidecar out would let the agent
 * out too). The cluster needs a CNI that enforces NetworkPolicy (k3s's built-in controller,
 * Calico, Cilium; flannel alone does not), and the node runs `egress-proxy serve` with the
 * ConfigMap's `egress-proxy.json` before the Pod starts; a node without it gives the session no
 * network, never an open one.
 *
 * Hardening maps one to one: drop ALL capabilities, no privilege Hardening maps one to one: drop ALL capabilities, no privilege
 * escalation (NoNewPrivs), uid 1000, memory and cpu limits, hostPath volumes read-only where
 * the plan says so. Kubernetes has no per-pod pids field: the limit travels as podman's
 * annotation (podman 5.5+) and as agent-sandbox/pids-limit; on a cluster the kubelet's
 * node-wide `podPidsLimit` sets it at the pod cgroup (a longer note as an annotation is
 * refused by podman 4.3's kube play: values over 63 characters).
 * The seccomp profile sandbox-run gives every session (no namespaces inside) is a Localhost
 * profile here, by its file name under the node's seccomp root (the kubelet's
 * /var/lib/kubelet/seccomp; podman kube play's --seccomp-profile-root, same default): the
 * securityContext field, which Kubernetes 1.19+ reads (1.27+ only it), and the pod annotation,
 * which is all podman 4.3's kube play reads (measured: the field alone leaves unshare -U
 * working in the pod). A node without the file refuses to start the pod (kube play: exit 125).
 */
import { ToolError } from '@agent-sandbox/shared';
import { parseDuration } from '@agent-sandbox/shared/limits';
import { parseSize } from '@agent-sandbox/shared/limits';
import { seccompProfileName } from '@agent-sandbox/sandbox-run';
import type { SessionLimits } from '@agent-sandbox/shared/schemas/agent-sandbox';
import type { MountEntry } from '@agent-sandbox/shared/schemas/mount-plan';
import type { EgressProxyConfig } from '@agent-sandbox/shared/schemas/egress-proxy';

export const containerName = 'agent';
export const pidsAnnotation = `io.podman.annotations.pids-limit/${containerName}`;
export const sessionLabel = 'agent-sandbox/session';
/** The deprecated annotation podman 4.3's kube play reads (Kubernetes before 1.27 requires it to match the field). */
export const seccompAnnotation = 'seccomp.security.alpha.kubernetes.io/pod';
/** The Localhost profile: sandbox-run's file, installed on each node as <seccomp root>/agent-sandbox.json. */
export const seccompProfile = { type: 'Localhost', localhostProfile: seccompProfileName } as const;

export interface KubeInput {
  sessionId: string;
  /** The broker config the node runs for this Pod (default egress), or none (--egress none). */
  broker?: EgressProxyConfig;
  image: string;
  command: string[];
  workdir: string;
  mounts: MountEntry[];
  limits: SessionLimits;
  env: Record<string, string>;
}

/** A size as the launcher takes it ("12g", "512m", "1.5g", bytes) -> a Kubernetes quantity ("12Gi", "512Mi", "1536Mi"). */
export function memoryQuantity(value: string): string {
  const bytes = parseSize('--memory', value);
  for (const [unit, size] of [
    ['Gi', 1024 ** 3],
    ['Mi', 1024 ** 2],
    ['Ki', 1024],
  ] as const) {
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return String(bytes);
}

/** cpus (1.5) -> a Kubernetes cpu quantity in millicores ("1500m"). */
export function cpuQuantity(cpus: number): string {
  return `${Math.round(cpus * 1000)}m`;
}

/** A DNS-1123 label for volume names. */
function volumeName(index: number, destination: string): string {
  const slug = destination
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return `v${index}-${slug || 'root'}`.replace(/-+$/, '');
}

/** The name of a session's objects (a DNS-1123 subdomain). */
export function podNameOf(sessionId: string): string {
  return `agent-sandbox-${sessionId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`;
}

const sessionLabelValue = (sessionId: string) => sessionId.replace(/[^A-Za-z0-9._-]/g, '-');

/** Deny-all for the session's Pod: no rule in either direction, so nothing in, nothing out (DNS included). */
export function networkPolicy(sessionId: string): Record<string, unknown> {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: podNameOf(sessionId),
      labels: { 'app.kubernetes.io/name': 'agent-sandbox', [sessionLabel]: sessionLabelValue(sessionId) },
    },
    spec: {
      podSelector: { matchLabels: { [sessionLabel]: sessionLabelValue(sessionId) } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [],
    },
  };
}

/** The node's broker config for the session (what `egress-proxy serve` reads on stdin). */
export const brokerConfigKey = 'egress-proxy.json';

export function brokerConfigMap(sessionId: string, config: EgressProxyConfig): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `${podNameOf(sessionId)}-egress`,
      labels: { 'app.kubernetes.io/name': 'agent-sandbox', [sessionLabel]: sessionLabelValue(sessionId) },
    },
    data: { [brokerConfigKey]: `${JSON.stringify(config)}\n` },
  };
}

/** What `kube` prints: one List (kubectl applies it; podman 4.3 needs the items as a YAML stream). */
export function kubeManifest(input: KubeInput): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [podManifest(input), networkPolicy(input.sessionId), ...(input.broker ? [brokerConfigMap(input.sessionId, input.broker)] : [])],
  };
}

/** The Pod manifest (a plain object; JSON is valid YAML, so `kube play` reads it as is). */
export function podManifest(input: KubeInput): Record<string, unknown> {
  const memory = memoryQuantity(input.limits.memory);
  const cpu = cpuQuantity(input.limits.cpus);
  // A hostPath has no private layer: an overlay mount would hand the Pod the host directory itself.
  if (input.mounts.some((m) => m.overlay))
    throw new ToolError('usage', 'bad-flag', 'kube: an overlay mount (--cache) cannot be a hostPath volume');
  const volumes = input.mounts.map((m, i) => ({
    name: volumeName(i, m.destination),
    hostPath: { path: m.source },
  }));
  const volumeMounts = input.mounts.map((m, i) => ({ name: volumes[i]!.name, mountPath: m.destination, readOnly: m.readOnly }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameOf(input.sessionId),
      labels: { 'app.kubernetes.io/name': 'agent-sandbox', [sessionLabel]: sessionLabelValue(input.sessionId) },
      annotations: {
        [pidsAnnotation]: String(input.limits.pids),
        'agent-sandbox/pids-limit': String(input.limits.pids),
        [seccompAnnotation]: `localhost/${seccompProfileName}`,
      },
    },
    spec: {
      restartPolicy: 'Never',
      // The session's --timeout, held by the cluster itself (the kubelet ends the pod), as podman's --timeout holds it locally.
      activeDeadlineSeconds: parseDuration('--timeout', input.limits.timeout),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, seccompProfile },
      containers: [
        {
          name: containerName,
          image: input.image,
          imagePullPolicy: 'Never',
          args: input.command,
          workingDir: input.workdir,
          env: Object.entries(input.env).map(([name, value]) => ({ name, value })),
          securityContext: {
            capabilities: { drop: ['ALL'] },
            allowPrivilegeEscalation: false,
            privileged: false,
            runAsUser: 1000,
            runAsGroup: 1000,
            runAsNonRoot: true,
          },
          resources: { limits: { memory, cpu }, requests: { memory, cpu } },
          volumeMounts,
        },
      ],
      volumes,
    },
  };
}

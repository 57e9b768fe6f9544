// `agent-sandbox kube` prints one List: a Pod that the Kubernetes Pod schema accepts
// (kubernetes-models' validator, generated from the Kubernetes OpenAPI), with the hardening and
// limits of the plan; a NetworkPolicy that denies that Pod everything in and out; and, with the
// default egress, the node broker's ConfigMap. The Pod's only way out is the broker's socket.
import t, { type Test } from 'tap';
import path from 'node:path';
import { Pod } from 'kubernetes-models/v1/Pod';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { repoRoot } from '@agent-sandbox/testkit';
import { socatRelayPrefix } from '@agent-sandbox/egress-proxy';
import { podManifest, memoryQuantity, cpuQuantity } from '../../dist/commands/kube/manifest.js';
import { existsSync, rmSync } from 'node:fs';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ images: [] });

/** kube makes the node broker's socket directory (as a run would): removed with the test. */
const removeSocketDir = (t: Test, id: string) =>
  t.teardown(() => rmSync(`/run/agent-sandbox/egress/${id}`, { recursive: true, force: true }));

t.test('the manifest from a real session plan validates against the Kubernetes Pod schema', requirements, async (t) => {
  const fx = await sessionFixture(t, 'kube');
  removeSocketDir(t, fx.id);
  const out = await fx.run(['kube', ...fx.flags, '--memory', '512m', '--pids', '100', '--cpus', '1.5', '--', ...fx.agentArgs(0)]);
  t.equal(out.exitCode, 0, out.stderr);
  t.match(out.json, { apiVersion: 'v1', kind: 'List' });
  const [doc, policy, config, ...rest] = out.json.items;
  t.same(rest, [], 'three objects');
  t.doesNotThrow(() => new Pod(doc).validate(), 'valid Pod');
  t.doesNotThrow(() => new NetworkPolicy(policy).validate(), 'valid NetworkPolicy');
  t.doesNotThrow(() => new ConfigMap(config).validate(), 'valid ConfigMap');
  t.same(
    policy.spec,
    { podSelector: { matchLabels: { 'agent-sandbox/session': fx.id } }, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] },
    "the policy selects this session's Pod (never every pod) and allows nothing",
  );
  t.equal(doc.metadata.labels['agent-sandbox/session'], fx.id, 'the Pod carries that label');
  const broker = JSON.parse(config.data['egress-proxy.json']);
  t.match(
    broker,
    {
      socketPath: `/run/agent-sandbox/egress/${fx.id}/egress.sock`,
      sessionId: fx.id,
      allow: ['api.openai.com', 'chatgpt.com', 'auth.openai.com'],
    },
    "the node broker's config",
  );
  t.same(
    doc.spec.containers[0].args.slice(0, 6),
    socatRelayPrefix('/run/sandbox-egress/egress.sock', 3128, 1).slice(0, 6),
    'the relay starts beside the agent, which it then execs',
  );
  t.match(doc.spec.containers[0].args[6], /^[1-9][0-9]*$/, "the relay's connections at once (half the session's pids)");
  const env = Object.fromEntries((doc.spec.containers[0].env as { name: string; value: string }[]).map((e) => [e.name, e.value]));
  t.match(env, { HTTPS_PROXY: 'http://127.0.0.1:3128', NO_PROXY: 'localhost,127.0.0.1,::1' }, 'the proxy variables');
  t.match(doc, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      annotations: {
        'io.podman.annotations.pids-limit/agent': '100',
        'seccomp.security.alpha.kubernetes.io/pod': 'localhost/agent-sandbox.json',
      },
    },
    spec: {
      restartPolicy: 'Never',
      securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'agent-sandbox.json' } },
      containers: [
        {
          securityContext: { capabilities: { drop: ['ALL'] }, allowPrivilegeEscalation: false, runAsUser: 1000 },
          resources: { limits: { memory: '512Mi', cpu: '1500m' } },
        },
      ],
    },
  });
  const mounts = doc.spec.containers[0].volumeMounts as { mountPath: string; readOnly: boolean }[];
  t.same(
    Object.fromEntries(mounts.map((m) => [m.mountPath, m.readOnly])),
    {
      '/sandbox/home': false,
      [`/sandbox/workspaces/${fx.id}`]: false,
      '/sandbox-secrets/codex/auth.json': true,
      '/run/sandbox-egress': true,
    },
    'hostPath volumes read-only where the plan says so; the socket directory read-only',
  );
  t.equal(
    (doc.spec.volumes as { name: string; hostPath: { path: string } }[]).find((v) => v.hostPath.path.endsWith(`/egress/${fx.id}`))?.hostPath
      .path,
    `/run/agent-sandbox/egress/${fx.id}`,
    "the node's socket directory",
  );
  t.equal(fx.ranInWorkspace(), undefined, 'kube runs nothing');
});

t.test('with --egress none the Pod has no socket, no relay, and the same deny-all policy; no ConfigMap', requirements, async (t) => {
  const fx = await sessionFixture(t, 'kubenone');
  removeSocketDir(t, fx.id);
  const out = await fx.run(['kube', ...fx.flags, '--egress', 'none', '--', ...fx.agentArgs(0)]);
  t.equal(out.exitCode, 0, out.stderr);
  t.same(
    out.json.items.map((i: { kind: string }) => i.kind),
    ['Pod', 'NetworkPolicy'],
  );
  const pod = out.json.items[0];
  t.notOk(JSON.stringify(pod).includes('sandbox-egress'), 'no socket mount');
  t.notOk(JSON.stringify(pod).includes('HTTPS_PROXY'), 'no proxy variables');
  t.equal(pod.spec.containers[0].args[0], `/sandbox/workspaces/${fx.id}/stub-agent.sh`, 'the agent runs with no relay in front');
  t.same(out.json.items[1].spec.egress, []);
  t.notOk(existsSync(`/run/agent-sandbox/egress/${fx.id}`), 'no socket directory is made');
});

t.test("the Pod's Localhost seccomp profile is the file the launcher hands podman for the same session", requirements, async (t) => {
  const fx = await sessionFixture(t, 'kubesc');
  removeSocketDir(t, fx.id);
  const plan = await fx.run(['plan', ...fx.flags, '--', ...fx.agentArgs(0)]);
  t.equal(plan.exitCode, 0, plan.stderr);
  const profile = path.join(repoRoot, 'tools/sandbox-run/seccomp/agent-sandbox.json');
  t.same(
    (plan.json.argv as string[]).filter((a) => a.includes('seccomp')),
    [`--security-opt=seccomp=${profile}`],
    'the launcher (bundled sandbox-run) finds the profile beside sandbox-run',
  );
  const kube = await fx.run(['kube', ...fx.flags, '--', ...fx.agentArgs(0)]);
  t.equal(kube.exitCode, 0, kube.stderr);
  kube.json = kube.json.items[0];
  t.equal(
    kube.json.spec.securityContext.seccompProfile.localhostProfile,
    path.basename(profile),
    'the node installs that file under its seccomp root',
  );
  t.equal(
    kube.json.metadata.annotations['seccomp.security.alpha.kubernetes.io/pod'],
    `localhost/${path.basename(profile)}`,
    'field and annotation name the same profile (Kubernetes before 1.27 requires them to match)',
  );
  t.equal(fx.ranInWorkspace(), undefined, 'neither command ran anything');
});

t.test('the validator is not a rubber stamp: a wrong type is refused', async (t) => {
  const doc = podManifest({
    sessionId: 's',
    image: 'i',
    command: ['a'],
    workdir: '/w',
    mounts: [],
    limits: { memory: '1g', memorySwap: '1g', pids: 1, cpus: 1, cpuShares: 2, disk: '1g', timeout: '1h' },
    env: {},
  }) as any;
  t.doesNotThrow(() => new Pod(doc).validate());
  doc.spec.restartPolicy = 'Sometimes';
  t.throws(() => new Pod(doc).validate(), /restartPolicy/);
  doc.spec.restartPolicy = 'Never';
  doc.spec.securityContext.seccompProfile = { type: 'Localhost', localhostProfile: 7 };
  t.throws(() => new Pod(doc).validate(), /localhostProfile/, 'the seccompProfile field is checked too');
});

t.test('sizes the launcher accepts become exact Kubernetes quantities', async (t) => {
  t.equal(memoryQuantity('12g'), '12Gi');
  t.equal(memoryQuantity('512m'), '512Mi');
  t.equal(memoryQuantity('4096'), '4Ki', 'bytes: the largest exact binary unit');
  t.equal(memoryQuantity('1000'), '1000');
  t.equal(memoryQuantity('1.5g'), '1536Mi', 'what the launcher accepts, podman syntax');
  t.equal(memoryQuantity('512MiB'), '512Mi');
  t.equal(cpuQuantity(4), '4000m');
  t.equal(cpuQuantity(0.25), '250m');
});

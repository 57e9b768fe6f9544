// `agent-sandbox kube` prints a Pod that the Kubernetes Pod schema accepts (kubernetes-models'
// validator, generated from the Kubernetes OpenAPI), with the hardening and limits of the plan.
import t from 'tap';
import { Pod } from 'kubernetes-models/v1/Pod';
import { podManifest, memoryQuantity, cpuQuantity } from '../dist/kube-manifest.js';
import { sessionFixture } from './fixtures/session-fixture.js';

t.test('the manifest from a real session plan validates against the Kubernetes Pod schema', async (t) => {
  const fx = await sessionFixture(t, 'kube');
  const out = await fx.run(['kube', ...fx.flags, '--memory', '512m', '--pids', '100', '--cpus', '1.5', '--', ...fx.agentArgs(0)]);
  t.equal(out.exitCode, 0, out.stderr);
  const doc = out.json;
  t.doesNotThrow(() => new Pod(doc).validate(), 'valid Pod');
  t.match(doc, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { annotations: { 'io.podman.annotations.pids-limit/agent': '100' } },
    spec: {
      restartPolicy: 'Never',
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
    { '/sandbox/home': false, [`/sandbox/workspaces/${fx.id}`]: false, '/sandbox-secrets/codex/auth.json': true },
    'hostPath volumes read-only where the plan says so',
  );
  t.equal(fx.ranInWorkspace(), undefined, 'kube runs nothing');
});

t.test('the validator is not a rubber stamp: a wrong type is refused', async (t) => {
  const doc = podManifest({ sessionId: 's', image: 'i', command: ['a'], workdir: '/w', mounts: [], limits: { memory: '1g', memorySwap: '1g', pids: 1, cpus: 1, cpuShares: 2 }, env: {} }) as any;
  t.doesNotThrow(() => new Pod(doc).validate());
  doc.spec.restartPolicy = 'Sometimes';
  t.throws(() => new Pod(doc).validate(), /restartPolicy/);
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

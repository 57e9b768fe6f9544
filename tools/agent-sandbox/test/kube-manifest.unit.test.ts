// `agent-sandbox kube` prints a Pod that the Kubernetes Pod schema accepts (kubernetes-models'
// validator, generated from the Kubernetes OpenAPI), with the hardening and limits of the plan.
import t from 'tap';
import path from 'node:path';
import { Pod } from 'kubernetes-models/v1/Pod';
import { repoRoot } from '@agent-sandbox/testkit';
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
    metadata: { annotations: { 'io.podman.annotations.pids-limit/agent': '100', 'seccomp.security.alpha.kubernetes.io/pod': 'localhost/agent-sandbox.json' } },
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
    { '/sandbox/home': false, [`/sandbox/workspaces/${fx.id}`]: false, '/sandbox-secrets/codex/auth.json': true },
    'hostPath volumes read-only where the plan says so',
  );
  t.equal(fx.ranInWorkspace(), undefined, 'kube runs nothing');
});

t.test('the Pod\'s Localhost seccomp profile is the file the launcher hands podman for the same session', async (t) => {
  const fx = await sessionFixture(t, 'kubesc');
  const plan = await fx.run(['plan', ...fx.flags, '--', ...fx.agentArgs(0)]);
  t.equal(plan.exitCode, 0, plan.stderr);
  const profile = path.join(repoRoot, 'tools/sandbox-run/seccomp/agent-sandbox.json');
  t.same((plan.json.argv as string[]).filter((a) => a.includes('seccomp')), [`--security-opt=seccomp=${profile}`], 'the launcher (bundled sandbox-run) finds the profile beside sandbox-run');
  const kube = await fx.run(['kube', ...fx.flags, '--', ...fx.agentArgs(0)]);
  t.equal(kube.exitCode, 0, kube.stderr);
  t.equal(kube.json.spec.securityContext.seccompProfile.localhostProfile, path.basename(profile), 'the node installs that file under its seccomp root');
  t.equal(kube.json.metadata.annotations['seccomp.security.alpha.kubernetes.io/pod'], `localhost/${path.basename(profile)}`, 'field and annotation name the same profile (Kubernetes before 1.27 requires them to match)');
  t.equal(fx.ranInWorkspace(), undefined, 'neither command ran anything');
});

t.test('the validator is not a rubber stamp: a wrong type is refused', async (t) => {
  const doc = podManifest({ sessionId: 's', image: 'i', command: ['a'], workdir: '/w', mounts: [], limits: { memory: '1g', memorySwap: '1g', pids: 1, cpus: 1, cpuShares: 2, disk: '1g', timeout: '1h' }, env: {} }) as any;
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

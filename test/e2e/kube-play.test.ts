// The Pod manifest from `agent-sandbox kube` runs for real under `podman kube play` (the local
// stand-in for a kubelet, runc selected through a CONTAINERS_CONF file) and the denial and
// ceiling proofs pass inside the played pod. Podman 4.3 ignores the pids annotation, so, as a
// kubelet with podPidsLimit would, the test writes the limit at the pod cgroup before starting.
// The pod's Localhost seccomp profile is found as a node would find it: kube play's
// --seccomp-profile-root is the directory holding sandbox-run's agent-sandbox.json (a node has
// it under /var/lib/kubelet/seccomp, kube play's default root), and unshare fails inside.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { cgroupMode } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { repoRoot, runBin, tempDir } from '@agent-sandbox/testkit';

const proofs = path.join(repoRoot, 'test/e2e/fixtures/pod-proofs.sh');
const seccompRoot = path.join(repoRoot, 'tools/sandbox-run/seccomp');
const pids = 48;
const memory = '128m';
const memoryBytes = 128 * 1024 * 1024;

t.test('the kube manifest runs under podman kube play and the denial, no-namespace and fork-ceiling proofs pass inside the pod', async (t) => {
  const base = await tempDir(t, 'astest-kube-');
  await chmod(base, 0o755);
  const id = `astest-kube-${randomBytes(3).toString('hex')}`;
  const root = path.join(base, 'root');
  const ws = path.join(root, 'workspaces', id);
  await mkdir(ws, { recursive: true });
  await copyFile(proofs, path.join(ws, 'pod-proofs.sh'));
  await chmod(path.join(ws, 'pod-proofs.sh'), 0o755);
  await chown(ws, 1000, 1000);
  await mkdir(path.join(base, 'other', 'workspaces', 'neighbour'), { recursive: true });
  const home = path.join(base, 'home');
  await mkdir(path.join(home, '.codex'), { recursive: true });
  await writeFile(path.join(home, '.codex', 'auth.json'), JSON.stringify({ OPENAI_API_KEY: 'sk-canary-kube' }), { mode: 0o600 });
  // A neighbouring workspace under the same root must not be visible in the pod.
  await mkdir(path.join(root, 'workspaces', 'neighbour'));

  const out = await runBin(
    'agent-sandbox',
    ['kube', '--runtime', 'codex', '--workspace', id, '--root', root, '--pids', String(pids), '--memory', memory, '--agent-bin', `/sandbox/workspaces/${id}/pod-proofs.sh`, '--', id, String(pids), String(memoryBytes)],
    { env: { HOME: home, PATH: process.env['PATH'] ?? '/usr/bin:/bin' } },
  );
  t.equal(out.exitCode, 0, out.stderr);
  const manifest = out.json;
  const podName = manifest.metadata.name as string;
  t.equal(manifest.metadata.annotations['io.podman.annotations.pids-limit/agent'], String(pids), 'the pids limit travels as the podman annotation');
  t.equal(manifest.metadata.annotations['seccomp.security.alpha.kubernetes.io/pod'], 'localhost/agent-sandbox.json', 'the seccomp profile travels as the annotation podman 4.3 reads');
  const file = path.join(base, 'pod.json');
  await writeFile(file, JSON.stringify(manifest));
  const conf = path.join(base, 'containers.conf');
  await writeFile(conf, '[engine]\nruntime = "runc"\n[containers]\ndefault_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]\n');
  const env = { ...process.env, CONTAINERS_CONF: conf } as Record<string, string>;
  t.teardown(async () => {
    await runPodman(['pod', 'rm', '--force', '--ignore', podName], { expect: 'any', env });
    await rm(path.join(root, 'secrets'), { recursive: true, force: true });
  });

  await runPodman(['kube', 'play', '--start=false', '--seccomp-profile-root', seccompRoot, file], { env, timeoutMs: 120_000 });
  const cgroupPath = (await runPodman(['pod', 'inspect', podName, '--format', '{{.CgroupPath}}'], { env })).stdout.trim();
  t.ok(cgroupPath.length > 1, `pod cgroup ${cgroupPath}`);
  const pidsMax = cgroupMode() === 'v2' ? `/sys/fs/cgroup${cgroupPath}/pids.max` : `/sys/fs/cgroup/pids${cgroupPath}/pids.max`;
  t.equal(readFileSync(pidsMax, 'utf8').trim(), 'max', 'podman 4.3 applied no pids limit from the annotation (measured; why the test sets it)');
  await writeFile(pidsMax, `${pids}\n`);
  t.equal(readFileSync(pidsMax, 'utf8').trim(), String(pids), 'pod cgroup pids.max set as a kubelet podPidsLimit would');

  await runPodman(['pod', 'start', podName], { env, timeoutMs: 120_000 });
  const waited = await runPodman(['wait', `${podName}-agent`], { env, timeoutMs: 120_000 });
  const logs = await runPodman(['logs', `${podName}-agent`], { env, expect: 'any' });
  const text = `${logs.stdout}\n${logs.stderr}`;
  const claims = ['capabilities-dropped', 'no-new-privileges', 'runs-as-uid-1000', 'only-session-mounts', 'only-own-workspace', 'secret-mount-read-only', 'credential-installed', 'workspace-writable', 'memory-limit', 'no-user-namespace', 'no-mount-namespace', 'unshare-syscall-eperm', 'fork-ceiling'];
  let counted = 0;
  for (const claim of claims) {
    t.match(text, new RegExp(`PROOF ${claim} ok`), `${claim}: ${(text.match(new RegExp(`PROOF ${claim} .*`)) ?? ['missing'])[0]}`);
    counted += 1;
  }
  t.equal(counted, claims.length, 'every proof ran');
  t.equal(waited.stdout.trim(), '0', 'the proofs exited 0 inside the pod');
  t.notMatch(text, /sk-canary-kube/, 'the secret is in no log line');
  t.ok(existsSync('/proc/self'), 'the host is still working after the fork bomb');
});

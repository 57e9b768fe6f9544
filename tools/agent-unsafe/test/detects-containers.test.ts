// Each container signal alone is enough to refuse; a host with none is clean;
// an unreadable /proc/1/environ is no evidence. In-process, with a described host.
import t from 'tap';
import { containerEvidence, fakeHost, policyRefusals } from '../dist/index.js';

const hostCgroup = '12:pids:/user.slice/user-1000.slice/session-2.scope\n0::/user.slice/user-1000.slice/session-2.scope\n';
const clean = { '/proc/1/cgroup': '0::/init.scope\n', '/proc/self/cgroup': hostCgroup, '/proc/1/environ': 'HOME=/\0TERM=linux\0' };

const rows: { claim: string; files: Record<string, string | undefined>; env?: Record<string, string>; evidence: RegExp }[] = [
  { claim: '/run/.containerenv (podman)', files: { ...clean, '/run/.containerenv': '' }, evidence: /^\/run\/\.containerenv exists$/ },
  { claim: '/.dockerenv (docker)', files: { ...clean, '/.dockerenv': '' }, evidence: /^\/\.dockerenv exists$/ },
  {
    claim: 'a libpod cgroup of PID 1 (cgroup v1)',
    files: { ...clean, '/proc/1/cgroup': '9:name=systemd:/libpod_parent/libpod-4509aa\n' },
    evidence: /^\/proc\/1\/cgroup names/,
  },
  {
    claim: 'a docker cgroup of this process',
    files: { ...clean, '/proc/self/cgroup': '0::/system.slice/docker-3f2a.scope\n' },
    evidence: /^\/proc\/self\/cgroup names/,
  },
  {
    claim: 'a kubepods cgroup',
    files: { ...clean, '/proc/self/cgroup': '0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-1.scope\n' },
    evidence: /^\/proc\/self\/cgroup names/,
  },
  {
    claim: 'a containerd cgroup',
    files: { ...clean, '/proc/self/cgroup': '0::/containerd/abc\n' },
    evidence: /^\/proc\/self\/cgroup names/,
  },
  { claim: 'an lxc cgroup', files: { ...clean, '/proc/1/cgroup': '0::/lxc.payload.c1\n' }, evidence: /^\/proc\/1\/cgroup names/ },
  {
    claim: "container= in PID 1's environment",
    files: { ...clean, '/proc/1/environ': 'HOME=/\0container=podman\0' },
    evidence: /^PID 1 has container=/,
  },
  { claim: 'container= in our own environment', files: clean, env: { container: 'systemd-nspawn' }, evidence: /^container= is set/ },
];
let ran = 0;
for (const row of rows) {
  t.test(`${row.claim} alone is container evidence`, async (t) => {
    ran += 1;
    const found = containerEvidence(fakeHost(row.files), row.env ?? {});
    t.equal(found.length, 1, found.join('; '));
    t.match(found[0], row.evidence);
  });
}
t.test('every row ran', async (t) => t.equal(ran, rows.length));

t.test('a host with no signal has no container evidence', async (t) => {
  t.same(containerEvidence(fakeHost(clean), {}), []);
});

t.test('an unreadable /proc/1/environ (not root) is no evidence either way', async (t) => {
  t.same(containerEvidence(fakeHost({ ...clean, '/proc/1/environ': undefined }), {}), []);
});

t.test('cgroup names that merely contain a runtime word are not containers', async (t) => {
  const files = { ...clean, '/proc/self/cgroup': '0::/user.slice/user-1000.slice/user@1000.service/app.slice/mydockerfile-editor.scope\n' };
  t.same(containerEvidence(fakeHost(files), {}), []);
});

t.test('the policy lists every reason and leads with the TTY', async (t) => {
  const reasons = policyRefusals({
    stdinIsTTY: false,
    stdoutIsTTY: true,
    env: { CLAUDECODE: '1' },
    host: fakeHost({ ...clean, '/.dockerenv': '' }),
    parentPid: 999_999,
  });
  t.same(
    reasons.map((r) => r.code),
    ['no-tty', 'container-environment', 'agent-marker'],
  );
});

// sandbox-run finds its seccomp profile beside the installed tool and refuses (83) to start a
// session when that file is missing, is not JSON, or does not refuse namespaces (podman's
// default in its place): never a session without it. The real tool runs in a private mount
// namespace where the file is hidden or replaced, so the committed file is never touched.
import t from 'tap';
import { needs } from '@agent-sandbox/testkit';
import { execa } from 'execa';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { binPath, containerName, leakedContainers, repoRoot, tempDir } from '@agent-sandbox/testkit';
import { seccompProfilePath } from '../dist/index.js';

const busybox = 'localhost/agent-sandbox-busybox:latest';
const limits = { memory: '256m', memorySwap: '256m', pids: 64, cpus: 1, cpuShares: 256 };
const profile = path.join(repoRoot, 'tools/sandbox-run/seccomp/agent-sandbox.json');

/** Runs bin/sandbox-run (a real run, not a dry run) after `setup` (a shell line) in a private mount namespace. */
async function runWith(setup: string, name: string) {
  const out = await execa(
    'unshare',
    ['--mount', '--propagation', 'private', 'sh', '-c', `${setup} && exec "$@"`, 'sh', binPath('sandbox-run')],
    {
      input: JSON.stringify({ image: busybox, sessionId: 'noprofile', name, limits, command: ['sh', '-c', 'echo CONTAINER-RAN'] }),
      reject: false,
    },
  );
  return {
    exitCode: out.exitCode,
    stdout: String(out.stdout),
    stderr: String(out.stderr),
    json: JSON.parse(String(out.stdout).split('\n')[0] || 'null'),
  };
}

t.test("the profile is found from the tool's own location, as one absolute path", async (t) => {
  t.equal(seccompProfilePath(), profile, 'from tools/sandbox-run/dist');
  t.equal(seccompProfilePath(`${repoRoot}/tools/agent-sandbox/dist`), profile, 'from a bundle that includes sandbox-run (the launcher)');
  t.equal(seccompProfilePath(`${repoRoot}/tools/sandbox-run/dist`), profile, "from sandbox-run's own bundle");
});

const cases = [
  {
    claim: 'a missing profile is refused with 83 and no container is made',
    setup: `mount -t tmpfs none ${path.dirname(profile)}`,
    code: 'seccomp-profile-missing',
  },
  {
    claim: "podman's default profile in its place is refused with 83 (it allows unshare)",
    setup: `mount --bind /usr/share/containers/seccomp.json ${profile}`,
    code: 'seccomp-profile-invalid',
  },
  { claim: 'a profile that is not JSON is refused with 83', setup: 'NOTJSON', code: 'seccomp-profile-invalid' },
];
let ran = 0;
for (const row of cases) {
  t.test(row.claim, needs({ root: true, commands: ['unshare'] }), async (t) => {
    let setup = row.setup;
    if (setup === 'NOTJSON') {
      const dir = await tempDir(t, 'astest-badprofile-');
      await writeFile(path.join(dir, 'agent-sandbox.json'), '{"defaultAction": "SCMP_ACT_ERRNO", truncated');
      setup = `mount --bind ${dir}/agent-sandbox.json ${profile}`;
    }
    const name = containerName(t, 'noprofile');
    const out = await runWith(setup, name);
    t.equal(out.exitCode, 83, out.stderr);
    t.equal(out.json?.error?.code, row.code, out.stdout);
    t.match(out.json?.error?.message, /cannot be started safely: the seccomp profile .*agent-sandbox\.json/);
    t.notMatch(out.stdout + out.stderr, /CONTAINER-RAN/, 'the command never ran');
    t.same(
      (await leakedContainers()).filter((n) => n === name),
      [],
      'no container was made',
    );
    ran += 1;
  });
}
t.test('every refusal row ran', needs({ root: true, commands: ['unshare'] }), async (t) => {
  t.equal(ran, cases.length);
});

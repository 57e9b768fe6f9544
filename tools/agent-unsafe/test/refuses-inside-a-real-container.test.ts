// Inside a real podman container, under a real PTY (script inside the
// container), the hatch refuses (90) naming the container, and the stub agent
// never runs. The repo is mounted read-only and the real bin runs; the image's
// node is 18 and the tools are built for 20, so the host's node binary (same Debian, same
// libc) is mounted read-only beside it and put first on PATH.
import t, { type Test } from 'tap';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { runPodman } from '@agent-sandbox/shared/podman';
import { containerName, imageExists, repoRoot, hardeningFlags } from '@agent-sandbox/testkit';
import { makeHatchEnv, findRefusal } from './fixtures/hatch-env.js';

const image = 'localhost/agent-sandbox:latest';
const flags = hardeningFlags;

/** The image is built by another step (bash image/build-all.sh); wait for it rather than skip. */
async function waitForImage(): Promise<boolean> {
  for (let i = 0; i < 60; i += 1) {
    if (await imageExists(image)) return true;
    await new Promise((r) => setTimeout(r, 5000));
  }
  return false;
}

/** Runs `command` in the image with stub agents on PATH that write to /out (a host dir). */
async function runInContainer(t: Test, command: string) {
  t.ok(await waitForImage(), `${image} exists (bash image/build-all.sh builds it)`);
  const hatch = await makeHatchEnv(t);
  const out = `${hatch.dir}/out`;
  await mkdir(out);
  await chmod(out, 0o777);
  await chmod(hatch.dir, 0o755);
  for (const program of ['codex', 'claude', 'cursor-agent']) {
    await writeFile(`${hatch.stubDir}/${program}`, `#!/bin/sh\necho "${program} $*" >> /out/ran\n`);
    await chmod(`${hatch.stubDir}/${program}`, 0o755);
  }
  const name = containerName(t, 'unsafe-in-container');
  const path = `/stubs:/opt/host-node/bin:${repoRoot}/tools/agent-unsafe/bin:/usr/bin:/bin`;
  const result = await runPodman(
    [
      'run',
      '--rm',
      '--name',
      name,
      ...flags,
      '-v',
      '/usr/bin/node:/opt/host-node/bin/node:ro',
      '-v',
      `${repoRoot}:${repoRoot}:ro`,
      '-v',
      `${hatch.stubDir}:/stubs:ro`,
      '-v',
      `${out}:/out`,
      image,
      'sh',
      '-c',
      `PATH=${path}; export PATH; ${command}`,
    ],
    { expect: 'any', timeoutMs: 60_000 },
  );
  const output = `${result.stdout}\n${result.stderr}`.replace(/\r/g, '');
  return { exitCode: result.exitCode, output, ran: await readdir(out) };
}

t.test('control: inside the container a stub agent can run and leave its mark', async (t) => {
  const run = await runInContainer(t, 'script -q -e -c "codex hi" /dev/null');
  t.equal(run.exitCode, 0, 'exit 0', { output: run.output });
  t.same(run.ran, ['ran'], 'the stub wrote /out/ran, so "never ran" below means something');
});

const rows = [
  { claim: 'under a real PTY', command: 'script -q -e -c "cdx-unsafe hi" /dev/null', first: 'container-environment' },
  {
    claim: 'under a real PTY with container= removed from the environment',
    command: 'env -u container script -q -e -c "cld-unsafe hi" /dev/null',
    first: 'container-environment',
  },
  { claim: 'without a TTY', command: 'ca-unsafe hi', first: 'no-tty' },
];
let ran = 0;
for (const row of rows) {
  t.test(`inside a real container ${row.claim} the hatch refuses (90); the stub never runs`, async (t) => {
    ran += 1;
    const run = await runInContainer(t, row.command);
    t.equal(run.exitCode, 90, 'exit 90', { output: run.output });
    const refusal = findRefusal(run.output);
    t.equal(refusal?.error?.code, row.first);
    const evidence = (refusal?.error?.reasons ?? []).map((r: any) => r.evidence).join('\n');
    t.match(evidence, '/run/.containerenv exists', "podman's /run/.containerenv is named");
    t.match(evidence, /\/proc\/self\/cgroup names a container cgroup \(.*libpod/, 'the libpod cgroup is named');
    t.match(evidence, 'PID 1 has container= in its environment');
    t.same(run.ran, [], 'the stub agent never ran');
  });
}
t.test('every row ran', async (t) => t.equal(ran, rows.length));

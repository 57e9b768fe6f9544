// The hatch's one job: a human at a real terminal gets the agent, uncontained,
// even when the containerized path is broken (no podman on PATH, image absent).
import t from 'tap';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { makeHatchEnv, ranLines, runInHostLikeRoot, binDir } from './fixtures/hatch-env.js';
import { needs } from '@agent-sandbox/testkit';

// The host-like root is made with unshare and chroot: root only, reported as a skip elsewhere.
const hostLike = needs({ root: true, commands: ['unshare', 'chroot'] });

t.test('the containerized path is really broken in the host-like root', hostLike, async (t) => {
  const hatch = await makeHatchEnv(t);
  const noPodman = await runInHostLikeRoot(t, 'command -v podman', hatch, { pty: false });
  t.not(noPodman.exitCode, 0, 'podman is not on PATH');
  const noImage = await runInHostLikeRoot(t, '/usr/bin/podman --runtime runc image exists localhost/agent-sandbox:latest', hatch, {
    pty: false,
  });
  t.not(noImage.exitCode, 0, 'even podman by absolute path finds no image (its storage is not there)');
});

const rows = [
  { via: 'cdx-unsafe', program: 'codex' },
  { via: 'cld-unsafe', program: 'claude' },
  { via: 'ca-unsafe', program: 'cursor-agent' },
  { via: 'agent-unsafe codex --', program: 'codex' },
];
let ran = 0;
for (const row of rows) {
  t.test(`${row.via} starts the ${row.program} stub under a real PTY and passes argv through`, hostLike, async (t) => {
    ran += 1;
    const hatch = await makeHatchEnv(t);
    const result = await runInHostLikeRoot(t, `${binDir}/${row.via} --flag 'two words' "\\$HOME"`, hatch);
    t.equal(result.exitCode, 0, 'exit status', { output: result.output });
    t.same(await ranLines(hatch), [`${row.program} --flag two words $HOME`], 'the stub ran once with the argv as given');
    t.match(result.output, /UNCONTAINED SESSION: .* runs directly on this host/, 'the banner says the session is uncontained');
    t.match(result.output, /no systemd user manager here.*prlimit/, 'the banner says rlimits are set by prlimit');
    t.match(result.output, `AGENT_UNSAFE_SESSION=${row.program}`, 'the agent is marked as started by the hatch');
  });
}
t.test('every row ran', hostLike, async (t) => t.equal(ran, rows.length));

t.test("the agent's exit status is the hatch's exit status", hostLike, async (t) => {
  const hatch = await makeHatchEnv(t);
  const result = await runInHostLikeRoot(t, `${binDir}/cdx-unsafe`, hatch, { env: { STUB_EXIT: '7' } });
  t.equal(result.exitCode, 7, 'exit status', { output: result.output });
  t.equal((await ranLines(hatch)).length, 1);
});

t.test('without a user manager the agent runs under the RLIMIT_NPROC and RLIMIT_AS it announced', hostLike, async (t) => {
  const hatch = await makeHatchEnv(t);
  const result = await runInHostLikeRoot(t, `${binDir}/agent-unsafe codex --tasks 100 --address-space 12G`, hatch);
  t.equal(result.exitCode, 0, 'exit status', { output: result.output });
  const announced = /processes <= (\d+) for uid/.exec(result.output)?.[1];
  t.ok(announced, 'the banner names the process limit');
  t.match(result.output, new RegExp(`Max processes\\s+${announced}\\s+${announced}\\s+processes`), 'the stub sees that RLIMIT_NPROC');
  t.match(
    result.output,
    new RegExp(`Max address space\\s+${12 * 1024 ** 3}\\s+${12 * 1024 ** 3}\\s+bytes`),
    'the stub sees RLIMIT_AS of 12 GiB',
  );
});

t.test('with a user manager the agent is launched through systemd-run in unsafe.slice (stand-in systemd-run)', hostLike, async (t) => {
  const hatch = await makeHatchEnv(t, ['codex']);
  // A stand-in: there is no user manager on this machine. It answers --version like
  // systemd 256, records its argv, then execs what follows "--" as systemd-run --scope does.
  const standIn = [
    '#!/bin/sh',
    'if [ "$1" = --version ]; then echo "systemd 256 (256.7-1)"; exit 0; fi',
    `printf '%s\\n' "$*" > ${hatch.dir}/systemd-run.argv`,
    'while [ "$1" != -- ]; do shift; done; shift',
    'exec "$@"',
    '',
  ].join('\n');
  await writeFile(`${hatch.stubDir}/systemd-run`, standIn);
  await chmod(`${hatch.stubDir}/systemd-run`, 0o755);
  const result = await runInHostLikeRoot(t, `${binDir}/cdx-unsafe -p hi`, hatch, {
    setup: 'mkdir -p /run/user/0/systemd && : > /run/user/0/systemd/private',
  });
  t.equal(result.exitCode, 0, 'exit status', { output: result.output });
  t.same(await ranLines(hatch), ['codex -p hi']);
  const argv = (await readFile(`${hatch.dir}/systemd-run.argv`, 'utf8')).trim();
  t.equal(
    argv,
    `--user --scope --slice=unsafe.slice --quiet --collect --expand-environment=no -p MemoryMax=${12 * 1024 ** 3} -p TasksMax=512 -- ${hatch.stubDir}/codex -p hi`,
  );
  t.match(result.output, /its own systemd scope in unsafe\.slice/, 'the banner names the scope');
  t.match(result.output, /Max address space\s+unlimited/, 'no prlimit RLIMIT_AS was applied on this path');
});

// conmon writes a file named "oom" into podman's working directory when the kernel OOM-kills
// the container (measured: podman 4.3.1, conmon 2.1.6). podman therefore never runs in the
// caller's directory: an agent's OOM must not drop a file into the user's repository.
import t from 'tap';
import { readdir } from 'node:fs/promises';
import { runBin, containerName, tempDir } from '@agent-sandbox/testkit';

const busybox = 'localhost/agent-sandbox-busybox:latest';

t.test("an OOM-killed session exits 137 and leaves nothing in the caller's working directory", async (t) => {
  const cwd = await tempDir(t, 'sandbox-run-oom-cwd-');
  const name = containerName(t, 'oomcwd');
  const plan = {
    image: busybox,
    sessionId: 'oomcwd',
    name,
    limits: { memory: '32m', memorySwap: '32m', pids: 64, cpus: 1, cpuShares: 256 },
    command: ['sh', '-c', 'a=x; while true; do a="$a$a"; done'],
  };
  const out = await runBin('sandbox-run', [], { input: plan, cwd });
  t.equal(out.exitCode, 137, out.stderr);
  t.same(await readdir(cwd), [], 'no "oom" (or any other) file in the caller\'s directory');
});

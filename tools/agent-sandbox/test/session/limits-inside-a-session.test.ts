// The declared limits are the ones the agent lives under: a session started by the launcher
// with --memory 256m --pids 64 reads 268435456 and 64 from its own cgroup files inside the
// container, and its exit status passes through. On cgroup v1 (this host, root) and on v2
// (the VM tier's guest, root and uid 1000), where the files have other names.
import t from 'tap';
import { cgroupMode } from '@agent-sandbox/shared';
import { needs } from '@agent-sandbox/testkit';
import { nothingLeft, sessionFixture } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';
const files =
  cgroupMode() === 'v2'
    ? { memory: '/sys/fs/cgroup/memory.max', pids: '/sys/fs/cgroup/pids.max' }
    : { memory: '/sys/fs/cgroup/memory/memory.limit_in_bytes', pids: '/sys/fs/cgroup/pids/pids.max' };

t.test(
  'a --memory 256m --pids 64 session reads memory 268435456 and pids 64 inside, and its status passes through',
  needs({ podman: true, images: [image] }),
  async (t) => {
    const fx = await sessionFixture(t, 'limits');
    const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
    const script = `echo "memory=$(cat ${files.memory}) pids=$(cat ${files.pids})"; exit 5`;
    const out = await fx.run(
      ['run', ...flags, '--image', image, '--memory', '256m', '--pids', '64', '--agent-bin', '/bin/sh', '--', '-c', script],
      { timeoutMs: 600_000 },
    );
    t.equal(out.exitCode, 5, `the agent's status passes through (stderr: ${out.stderr.trim().split('\n').slice(-3).join(' | ')})`);
    t.match(out.stdout, /^memory=268435456 pids=64$/m, `inside: ${files.memory} and ${files.pids}`);
    const [line] = fx.ledgerLines();
    t.match(
      line,
      { outcome: 'ran', exitCode: 5, reason: 'exited', limits: { memory: '256m', pids: 64 } },
      'the ledger states the limits the session ran under',
    );
    t.same(await fx.leftovers(), nothingLeft, 'nothing is left');
  },
);

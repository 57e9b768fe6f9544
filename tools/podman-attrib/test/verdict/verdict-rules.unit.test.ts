// The decision rules, pure, row by row; and the log parsers on real record shapes.
import t from 'tap';
import { decide, findKernelEvents, parseKmsgRecord, signalOfStatus } from '../../dist/index.js';
import { pidsPeak } from '../../dist/cgroup/counters.js';

const oomLine = (path: string) =>
  `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=libpod-ab,mems_allowed=0,oom_memcg=${path},task_memcg=${path},task=sh,pid=4290,uid=0`;
const pidsLine = (path: string) => `cgroup: fork rejected by pids controller in ${path}`;

const rows: { claim: string; input: any; reason: string; basis?: RegExp }[] = [
  { claim: 'a plain status is exited', input: { exitCode: 3, counters: {} }, reason: 'exited', basis: /^exit status 3$/ },
  { claim: '137 without OOM evidence is signal', input: { exitCode: 137, counters: {} }, reason: 'signal', basis: /SIGKILL/ },
  { claim: '143 is signal SIGTERM', input: { exitCode: 143, counters: {} }, reason: 'signal', basis: /SIGTERM/ },
  {
    claim: '137 with our OOM line is oom-killed',
    input: { exitCode: 137, counters: {}, kernel: { oomKills: [oomLine('/agent-sandbox/s1/libpod-x')], pidsRejections: [] } },
    reason: 'oom-killed',
    basis: /^kernel log: oom-kill/,
  },
  {
    claim: 'an OOM kill of a child the agent survived is still reported',
    input: { exitCode: 0, counters: {}, kernel: { oomKills: ['oom-kill:...'], pidsRejections: [] } },
    reason: 'oom-killed',
  },
  {
    claim: 'a v2 parent counter memory.events oom_kill is oom-killed, naming the counter',
    input: { exitCode: 137, counters: { 'memory.events:oom_kill': 1 } },
    reason: 'oom-killed',
    basis: /memory\.events:oom_kill = 1/,
  },
  {
    claim: 'a pids rejection with exit 0 is pids-limit',
    input: { exitCode: 0, counters: {}, kernel: { oomKills: [], pidsRejections: [pidsLine('/agent-sandbox/s1/libpod-x')] } },
    reason: 'pids-limit',
  },
  {
    claim: 'a v2 parent counter pids.events max is pids-limit, naming the counter',
    input: { exitCode: 2, counters: { 'pids.events:max': 7 } },
    reason: 'pids-limit',
    basis: /pids\.events:max = 7/,
  },
  {
    claim: "127 with podman's Error line and no start event is start-failed",
    input: {
      exitCode: 127,
      counters: {},
      events: [
        { status: 'create', time: 'x' },
        { status: 'remove', time: 'y' },
      ],
      stderrTail: 'Error: runc: exec: "/x": not found',
    },
    reason: 'start-failed',
    basis: /^podman status 127 with Error: /,
  },
  {
    claim: '127 after the container died (the command returned it) is exited, whatever stderr says',
    input: {
      exitCode: 127,
      counters: {},
      events: [
        { status: 'start', time: 'x' },
        { status: 'died', time: 'y', containerExitCode: 127 },
      ],
      stderrTail: 'Error: pretend',
    },
    reason: 'exited',
  },
  {
    claim: '126 with no event log and no Error line is exited (no evidence of a start failure, no guess)',
    input: { exitCode: 126, counters: {} },
    reason: 'exited',
  },
  {
    claim: 'a container inspect calls never started is start-failed even with status 0',
    input: { exitCode: 0, counters: {}, neverStarted: true },
    reason: 'start-failed',
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, async (t) => {
    const v = decide(row.input);
    t.equal(v.reason, row.reason);
    if (row.basis) t.match(v.basis, row.basis);
    ran += 1;
  });
}
t.test('every verdict row ran', async (t) => t.equal(ran, rows.length));

t.test('kernel lines count only for our cgroup path, never a longer sibling name', async (t) => {
  const records = [
    oomLine('/agent-sandbox/s10/libpod-a'),
    pidsLine('/agent-sandbox/s10/libpod-a'),
    oomLine('/agent-sandbox/s1/libpod-b'),
    pidsLine('/agent-sandbox/s1'),
  ].map((message, i) => ({ seq: i, usec: i, message }));
  const found = findKernelEvents(records, '/agent-sandbox/s1');
  t.equal(found.oomKills.length, 1);
  t.match(found.oomKills[0], /s1\/libpod-b/);
  t.same(found.pidsRejections, [pidsLine('/agent-sandbox/s1')]);
  t.equal(findKernelEvents(records, 'libpod-a').oomKills.length, 1, 'a bare libpod-<id> matches that component anywhere');
  t.equal(findKernelEvents(records, 'libpod').oomKills.length, 0, 'a prefix of a component does not match');
});

t.test('a /dev/kmsg record parses into seq, usec and the first line of the message', async (t) => {
  t.same(parseKmsgRecord('6,425,769582551,-;cgroup: fork rejected by pids controller in /a/b\n SUBSYSTEM=x\n'), {
    seq: 425,
    usec: 769582551,
    message: 'cgroup: fork rejected by pids controller in /a/b',
  });
  t.equal(parseKmsgRecord('garbage'), undefined);
  // /dev/kmsg's own escape of a backslash, as a slice path brings one (measured in the VM tier's guest)
  t.equal(
    parseKmsgRecord(
      '6,9,1,-;cgroup: fork rejected by pids controller in /agent_sandbox.slice/agent_sandbox-a\\x5cx2db.slice/libpod-x.scope\n',
    )?.message,
    'cgroup: fork rejected by pids controller in /agent_sandbox.slice/agent_sandbox-a\\x2db.slice/libpod-x.scope',
  );
});

t.test('128+n names the signal; other statuses name none', async (t) => {
  t.equal(signalOfStatus(137), 'SIGKILL');
  t.equal(signalOfStatus(130), 'SIGINT');
  t.equal(signalOfStatus(128), undefined);
  t.equal(signalOfStatus(3), undefined);
});

t.test("pids peak: conmon's setup peak is not counted as the container's", async (t) => {
  t.equal(pidsPeak({ 'pids.peak': 62, 'conmon/pids.peak': 13 }, 40), 61, 'a container-dominated peak minus conmon itself');
  t.equal(pidsPeak({ 'pids.peak': 14, 'conmon/pids.peak': 14 }, 2), 2, 'a setup-dominated peak falls back to the sample');
  t.equal(pidsPeak({ 'pids.peak': 14 }, 2), 14, 'without a conmon child the parent is the count');
  t.equal(pidsPeak({}, null), null, 'nothing survived: null, not a guess');
  // The VM tier's guest (systemd, v2): the slice peaked at 65 under --pids 64, its container at 64, conmon's scope held 1.
  t.equal(
    pidsPeak({ 'pids.peak': 65, 'descendants/conmon-scope': 1 }, 40),
    64,
    "conmon's own scope in the slice: its one task is taken out",
  );
  t.equal(pidsPeak({ 'pids.peak': 3, 'descendants/conmon-scope': 1 }, 1), 2);
  t.equal(pidsPeak({ 'pids.peak': 1, 'descendants/conmon-scope': 1 }, null), 1, 'never below one task');
});

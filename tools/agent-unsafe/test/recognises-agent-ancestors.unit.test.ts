// Which processes count as an agent CLI, and how the /proc walk reads the ppid
// chain. In-process with described /proc files; the real walk is proved with
// real processes in refuses-agent-ancestor.test.ts.
import t from 'tap';
import { fakeHost, isAgentProcess, parseStatPpid, walkAncestry } from '../dist/index.js';

t.test('the ppid is read after the last ")" so a comm with spaces and parentheses cannot fool it', async (t) => {
  t.equal(parseStatPpid('4242 (a) b (c) S 17 4242 4242 0 -1'), 17);
  t.equal(parseStatPpid('1 (init) S 0 1 1 0'), 0);
  t.equal(parseStatPpid('garbage'), undefined);
});

const rows: { claim: string; comm: string; argv: string[]; agent: boolean }[] = [
  {
    claim: 'the codex native binary',
    comm: 'codex',
    argv: ['/usr/lib/node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/codex/codex'],
    agent: true,
  },
  {
    claim: 'node running the codex npm launcher',
    comm: 'node',
    argv: ['node', '/usr/lib/node_modules/@openai/codex/bin/codex.js'],
    agent: true,
  },
  { claim: 'claude by its argv[0]', comm: 'MainThread', argv: ['claude', '--resume'], agent: true },
  {
    claim: 'node running claude-code cli.js',
    comm: 'node',
    argv: ['/usr/bin/node', '/home/u/.npm-global/lib/node_modules/@anthropic-ai/claude-code/cli.js'],
    agent: true,
  },
  { claim: 'cursor-agent', comm: 'cursor-agent', argv: ['cursor-agent'], agent: true },
  { claim: "cursor-agent's newer name agent", comm: 'agent', argv: ['/home/u/.local/bin/agent'], agent: true },
  {
    claim: 'node running cursor-agent from its install dir',
    comm: 'node',
    argv: ['node', '/home/u/.local/share/cursor-agent/versions/1/index.js'],
    agent: true,
  },
  { claim: 'a shell script named codex', comm: 'codex', argv: ['/bin/sh', '/tmp/x/codex'], agent: true },
  { claim: 'bash', comm: 'bash', argv: ['-bash'], agent: false },
  {
    claim: 'the hatch itself (node agent-unsafe)',
    comm: 'node',
    argv: ['node', '/repo/tools/agent-unsafe/bin/agent-unsafe', 'codex'],
    agent: false,
  },
  { claim: 'the cdx-unsafe wrapper', comm: 'cdx-unsafe', argv: ['/bin/sh', '/repo/tools/agent-unsafe/bin/cdx-unsafe'], agent: false },
  { claim: 'ssh-agent', comm: 'ssh-agent', argv: ['ssh-agent', '-s'], agent: false },
  { claim: 'vim editing codex.md', comm: 'vim', argv: ['vim', 'codex.md'], agent: false },
];
let ran = 0;
for (const row of rows) {
  t.test(`${row.claim} is ${row.agent ? '' : 'not '}an agent CLI`, async (t) => {
    ran += 1;
    t.equal(isAgentProcess({ pid: 10, ppid: 1, comm: row.comm, argv: row.argv }), row.agent);
  });
}
t.test('every row ran', async (t) => t.equal(ran, rows.length));

function proc(pid: number, ppid: number, comm: string, argv: string[]): Record<string, string> {
  return {
    [`/proc/${pid}/stat`]: `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1`,
    [`/proc/${pid}/comm`]: `${comm}\n`,
    [`/proc/${pid}/cmdline`]: `${argv.join('\0')}\0`,
  };
}

t.test('the walk finds an agent two levels up and stops at PID 1', async (t) => {
  const host = fakeHost({
    ...proc(30, 20, 'sh', ['sh', '-c', 'cdx-unsafe']),
    ...proc(20, 10, 'codex', ['codex']),
    ...proc(10, 1, 'bash', ['-bash']),
    ...proc(1, 0, 'systemd', ['/sbin/init']),
  });
  const result = walkAncestry(host, 30);
  t.same(result.walked, [30, 20, 10, 1]);
  t.same(
    result.agents.map((p) => p.pid),
    [20],
  );
  t.equal(result.unreadable, undefined);
});

t.test('an unreadable ancestor ends the walk and is reported', async (t) => {
  const host = fakeHost({ ...proc(30, 20, 'sh', ['sh']) });
  const result = walkAncestry(host, 30);
  t.same(result.walked, [30]);
  t.equal(result.unreadable, 20);
});

t.test('a ppid loop does not hang the walk', async (t) => {
  const host = fakeHost({ ...proc(5, 6, 'a', ['a']), ...proc(6, 5, 'b', ['b']) });
  t.same(walkAncestry(host, 5).walked, [5, 6]);
});

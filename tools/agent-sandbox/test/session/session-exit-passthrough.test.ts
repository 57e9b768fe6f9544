// A real session on this machine: the agent runs in the container (never the host), its exit
// status comes back unchanged, exec mode keeps stdout for the bare log path, and the ledger
// gets one schema-valid line with containment, limits, reason and peaks, never the secret.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { validateDocument } from '@agent-sandbox/shared';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { sessionNeeds, canary, sessionFixture } from '../fixtures/session-fixture.js';
import { socatRelayPrefix } from '@agent-sandbox/egress-proxy';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds();

for (const status of [0, 7, 143]) {
  t.test(`the agent's exit status ${status} is passed through unchanged`, requirements, async (t) => {
    const fx = await sessionFixture(t, `exit${status}`);
    const out = await fx.run(['run', ...fx.flags, '--memory', '256m', '--pids', '64', '--', ...fx.agentArgs(status)]);
    t.equal(out.exitCode, status, out.stderr);
    t.match(out.stdout, /stub-agent stdout args=/, 'the agent owns stdout');
    t.match(fx.ranInWorkspace(), /^pid1=tini uid=1000 NoNewPrivs:1/, 'it ran in the container as uid 1000 with NoNewPrivs');
    t.notOk(fx.ranOnHost(), 'not on the host');
    const [line] = fx.ledgerLines();
    t.doesNotThrow(() => validateDocument(LedgerLine, line, 'ledger'), 'the ledger line matches its schema');
    t.match(line, {
      sessionId: fx.id,
      runtime: 'codex',
      account: 'default',
      host: 'local',
      containment: 'podman-rootful',
      image: 'localhost/agent-sandbox-agents:latest', // the default: the image with the real agent CLIs
      limits: { memory: '256m', memorySwap: '256m', pids: 64 },
      exitCode: status,
      outcome: 'ran',
      // podman-attrib reads 128+n as a signal (it cannot tell exit 143 from SIGTERM); the status itself is unchanged
      reason: status > 128 ? 'signal' : 'exited',
    });
    t.ok(line.peak.pids >= 1, `peak pids measured (${line.peak.pids})`);
    t.ok(Date.parse(line.endedAt) >= Date.parse(line.startedAt), 'start and end');
    t.notMatch(readFileSync(fx.ledger, 'utf8'), canary, 'the secret is not in the ledger');
    t.notMatch(out.stdout + out.stderr, canary, 'nor in any output');
    t.notOk(
      existsSync(`${fx.root}/homes/${fx.id}/.codex/auth.json`),
      'the installed credential copy does not outlive the session on the host',
    );
    t.notOk(existsSync(`${fx.root}/secrets/${fx.id}/codex`), 'the staged copy is removed');
  });
}

t.test('exec mode prints only the bare log path on stdout; the agent output is in that log', requirements, async (t) => {
  const fx = await sessionFixture(t, 'exec');
  const out = await fx.run(['exec', ...fx.flags, '--', ...fx.agentArgs(3)]);
  t.equal(out.exitCode, 3, out.stderr);
  const lines = out.stdout.split('\n').filter(Boolean);
  t.equal(lines.length, 1, 'one line on stdout');
  const logPath = lines[0]!;
  t.match(logPath, /^\/.*\.log$/, 'an absolute log path');
  const log = readFileSync(logPath, 'utf8');
  t.match(log, /stub-agent stdout args=3/, 'agent stdout in the log');
  t.match(log, /stub-agent stderr/, 'agent stderr in the log');
  t.notMatch(log, canary, 'no secret in the log');
  t.equal(fx.ledgerLines()[0].logPath, logPath, 'the ledger names the log');
});

t.test('plan prints the composed plan and runs nothing', requirements, async (t) => {
  const fx = await sessionFixture(t, 'plan');
  const out = await fx.run(['plan', ...fx.flags, '--', ...fx.agentArgs(0)]);
  t.equal(out.exitCode, 0, out.stderr);
  const plan = JSON.parse(out.stdout);
  t.match(plan, { ok: true, sessionId: fx.id, containment: 'podman-rootful', workdir: `/sandbox/workspaces/${fx.id}` });
  t.same(
    plan.command,
    [
      ...socatRelayPrefix('/run/sandbox-egress/egress.sock', 3128, plan.runPlan.limits.pids / 2),
      `/sandbox/workspaces/${fx.id}/stub-agent.sh`,
      '0',
      fx.hostMarker,
    ],
    'the agent command is the container command, after the egress relay (socat) has started',
  );
  t.equal(plan.argv.filter((a: string) => a === 'run').length, 1, 'a podman run argv');
  t.ok(plan.argv.includes('--cap-drop=ALL'));
  t.same(
    plan.mounts.map((m: { destination: string }) => m.destination).sort(),
    ['/run/sandbox-egress', '/sandbox-secrets/codex/auth.json', '/sandbox/home', `/sandbox/workspaces/${fx.id}`].sort(),
    "exactly the workspace, its home, the staged credential and the broker's socket directory",
  );
  t.ok(
    plan.mounts
      .filter((m: { destination: string }) => m.destination.startsWith('/sandbox-secrets') || m.destination === '/run/sandbox-egress')
      .every((m: { readOnly: boolean }) => m.readOnly),
    'the credential and the socket directory read-only',
  );
  t.equal(fx.ranInWorkspace(), undefined, 'nothing ran');
  t.equal(fx.ledgerLines().length, 0, 'plan writes no ledger line: no session');
});

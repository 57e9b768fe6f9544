// A running session is a place to work (issue 36), proved on one real session running `sleep`
// (one session for every claim: each costs seconds): `ps` lists it against its ceilings, read
// from what the session keeps; `shell` runs a command inside it as the agent, inside its
// cgroup, with no capability; `stop` ends it through its launcher with the verdict `stopped`,
// and the shell dies with it. Once it ended, `ps` lists nothing and `stop`/`shell` are refused
// with 93 (no-running-session).
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PsLine } from '@agent-sandbox/shared/validators/agent-sandbox-reports';
import { until } from '@agent-sandbox/testkit';
import { nothingLeft, sessionFixture, sessionNeeds, type SessionFixture } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';
const requirements = sessionNeeds({ images: [image] });
const variables = (text: string) => new Set(text.split('\n').filter((l) => l && !/^(PWD|OLDPWD|SHLVL|_)=/.test(l)));
// Under a private cgroup namespace (crun on cgroup v2) a process's cgroup reads "/": then the equality with the agent's is the proof.
const namespaced = (cgroup: string) => /^0::\/\n?$/.test(cgroup);
// podman exec takes seconds under CPU emulation (the VM tier): the shell's sleep may take two minutes to appear.

/** The one session every claim below is about, and the commands that act on it. */
interface Live {
  fx: SessionFixture;
  /** --root, for ps, shell and stop. */
  root: string[];
  /** The `run` that started it: settles when the session ended. */
  session: ReturnType<SessionFixture['run']>;
  /** `shell WS -- command`. */
  shell(command: string[]): ReturnType<SessionFixture['run']>;
}

/** Starts the session and waits until its agent runs. */
async function startLive(t: Test): Promise<Live> {
  const fx = await sessionFixture(t, 'live');
  const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
  const root = ['--root', fx.root];
  // The agent notes its cgroup and environment, then sleeps; it notes SIGTERM and carries on, so only the kill after the grace ends it.
  const agent =
    'trap \'echo term > "$PWD/.term"\' TERM; cat /proc/self/cgroup > "$PWD/.agent-cgroup"; env > "$PWD/.agent-env"; touch "$PWD/.running"; while :; do sleep 1; done';
  const session = fx.run(
    ['run', ...flags, '--image', image, '--memory', '512m', '--pids', '128', '--agent-bin', '/bin/sh', '--', '-c', agent],
    { timeoutMs: 180_000 },
  );
  await until('the session runs', () => existsSync(path.join(fx.workspace, '.running')), 90_000);
  return { fx, root, session, shell: (command) => fx.run(['shell', fx.id, ...root, '--', ...command]) };
}

/** `ps` reads the session's figures from what it keeps: one row, and one ps-line with --json. */
async function psListsIt(t: Test, c: Live): Promise<void> {
  const { fx, root } = c;
  const table = await fx.run(['ps', ...root]);
  t.equal(table.exitCode, 0, table.stderr);
  const [header, row, ...more] = table.stdout.trim().split('\n');
  t.match(header, /^WORKSPACE +RUNTIME +HOST +UP +MEMORY +PIDS/, 'the table goes to stdout, with a header');
  t.same(more, [], 'one row: the one session');
  t.match(
    row,
    new RegExp(`^${fx.id} +codex +local +\\d+s +[0-9.]+[kmg]?/512m +\\d+/128 `),
    'its row names the workspace, runtime, host, uptime, memory and pids against --memory and --pids',
  );
  const json = await fx.run(['ps', ...root, '--json']);
  const lines = json.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.equal(lines.length, 1, '--json: one object per line');
  const s = lines[0];
  t.ok(PsLine(s), `it is an agent-sandbox.ps-line (${JSON.stringify(PsLine.errors ?? [])})`);
  t.equal(s.workspace, fx.id);
  t.ok(s.memory.bytes > 0 && s.memory.limitBytes === 512 * 2 ** 20, `memory now ${s.memory.bytes} of 512m`);
  t.ok(
    s.pids.current >= 2 && s.pids.current <= 128 && s.pids.limit === 128,
    `pids now ${s.pids.current} of 128 (tini, the relay, sh's sleep)`,
  );
  t.ok(s.cpu.seconds >= 0 && s.cpu.limit > 0, `cpu ${s.cpu.seconds}s so far`);
  t.ok(s.disk.limitBytes > 0 && s.disk.asOf !== null, 'the disk as its launcher last counted it');
  t.same(
    { mode: s.egress.mode, reached: s.egress.reached, refused: s.egress.refused },
    { mode: 'broker', reached: 0, refused: 0 },
    'egress so far: nothing',
  );
}

/** `shell` runs as the agent would: its uid, its cgroup, its environment, no capability. */
async function shellIsTheAgents(t: Test, c: Live): Promise<void> {
  const { fx, shell } = c;
  const id = await shell(['id', '-u']);
  t.same({ exitCode: id.exitCode, stdout: id.stdout }, { exitCode: 0, stdout: '1000\n' }, "`shell WS -- id -u` prints the agent's uid");
  t.equal((await shell(['sh', '-c', 'exit 7'])).exitCode, 7, 'its exit status is passed through');
  const cgroup = await shell(['cat', '/proc/self/cgroup']);
  t.equal(
    cgroup.stdout,
    readFileSync(path.join(fx.workspace, '.agent-cgroup'), 'utf8'),
    "its process is in the agent's cgroup (every hierarchy), so inside every ceiling",
  );
  if (!namespaced(cgroup.stdout))
    t.match(cgroup.stdout, new RegExp(`/agent-sandbox/${fx.id}/|agent_sandbox-`), "the session's parent cgroup");
  const status = await shell(['grep', '-E', '^(CapEff|NoNewPrivs)', '/proc/self/status']);
  t.match(status.stdout, /CapEff:\s+0000000000000000\nNoNewPrivs:\s+1/, 'no capability, NoNewPrivs 1, as the agent');
  const agentEnv = variables(readFileSync(path.join(fx.workspace, '.agent-env'), 'utf8'));
  const shellEnv = variables((await shell(['env'])).stdout);
  const extra = [...shellEnv].filter((v) => !agentEnv.has(v));
  t.same(
    extra,
    [],
    `every variable of the shell is the agent's, with the agent's value (extra: ${JSON.stringify(extra.map((v) => v.split('=')[0]))})`,
  );
  t.notMatch([...shellEnv].join('\n'), new RegExp(fx.env.HOME!), "nothing of the launcher's environment");
}

/** `stop` goes through the launcher: SIGTERM, the kill after --grace, the verdict and ledger line `stopped`. */
async function stopEndsIt(t: Test, c: Live): Promise<void> {
  const { fx, root, session, shell } = c;
  const lingering = shell(['sleep', '600']);
  // The host sees the container's processes (rootful, or rootless through its user namespace).
  await until("the shell's sleep runs", () => spawnSync('pgrep', ['-f', '^sleep 600$']).status === 0, 120_000, 100);
  const began = Date.now();
  const stop = await fx.run(['stop', fx.id, ...root, '--grace', '2', '--json']);
  const took = Date.now() - began;
  t.equal(stop.exitCode, 0, stop.stderr);
  t.match(
    stop.json,
    { ok: true, workspace: fx.id, grace: 2, verdict: { reason: 'stopped', exitCode: 137 } },
    'the stop document names the verdict: stopped, the kill',
  );
  t.ok(took >= 2000, `the agent had its grace (${took} ms)`);
  t.match(stop.stderr, new RegExp(`session ${fx.id} ended: exit 137, stopped`), 'stop says how it ended');
  t.ok(existsSync(path.join(fx.workspace, '.term')), 'the agent got SIGTERM first');
  const ended = await session;
  t.equal(ended.exitCode, 137, "run exits with the agent's status");
  t.match(
    ended.stderr.trim().split('\n').pop(),
    new RegExp(`^agent-sandbox: session ${fx.id} ended: exit 137, stopped$`),
    "the session's last line says stopped",
  );
  const lingered = await lingering;
  t.not(lingered.exitCode, 0, `the shell's process died with the session (exit ${lingered.exitCode})`);
  const [line] = fx.ledgerLines();
  t.match(
    line,
    {
      reason: 'stopped',
      exitCode: 137,
      message: /^stopped by \S+ with agent-sandbox stop \(grace 2s\)$/,
      evidence: { stopped: 'stopped', stopRequest: { grace: 2 } },
    },
    'the ledger line: stopped, by whom, with which grace',
  );
  t.same(
    line.shells.named.map((n: { command: string[] }) => n.command.join(' ')),
    ['id -u', 'sh -c exit 7', 'cat /proc/self/cgroup', 'grep -E ^(CapEff|NoNewPrivs) /proc/self/status', 'env', 'sleep 600'],
    'and the shells run in it, in order: who ran what and when',
  );
  t.ok(
    line.shells.named.every((n: { at: string; by: string; tty: boolean }) => n.at && n.by && n.tty === false),
    'each with its time and user',
  );
}

/** An ended session is gone from `ps`, and `stop` and `shell` find nothing to act on. */
async function nothingRunsAfter(t: Test, c: Live): Promise<void> {
  const { fx, root } = c;
  t.equal((await fx.run(['ps', ...root, '--json'])).stdout, '', 'ps lists nothing');
  for (const args of [
    ['stop', fx.id],
    ['shell', fx.id, '--', 'true'],
  ]) {
    const refused = await fx.run([...args, ...root]);
    t.equal(refused.exitCode, 93, `${args[0]}: 93`);
    t.match(refused.stderr + refused.stdout, /no-running-session|no session of workspace/, `${args[0]}: names the cause`);
  }
  t.same(await fx.leftovers(), nothingLeft, 'nothing is left');
}

t.test('a running session is listed, entered and stopped', requirements, async (t) => {
  const c = await startLive(t);
  await t.test('ps lists it, against its ceilings', (t) => psListsIt(t, c));
  await t.test('shell runs a command inside it, as the agent, inside its cgroup, with nothing the agent lacks', (t) =>
    shellIsTheAgents(t, c),
  );
  await t.test('stop ends it through its launcher: SIGTERM, the kill after the grace, the verdict stopped; the shell dies with it', (t) =>
    stopEndsIt(t, c),
  );
  await t.test('once it ended, nothing runs: ps lists nothing; stop and shell are refused with 93', (t) => nothingRunsAfter(t, c));
});

// A running session is a place to work (issue 36), proved on one real session running `sleep`
// (one session for every claim: each costs seconds): `ps` lists it against its ceilings, read
// from what the session keeps; `shell` runs a command inside it as the agent, inside its
// cgroup, with no capability; `stop` ends it through its launcher with the verdict `stopped`,
// and the shell dies with it. Once it ended, `ps` lists nothing and `stop`/`shell` are refused
// with 93 (no-running-session).
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PsLine } from '@agent-sandbox/shared/validators/agent-sandbox-reports';
import { runPodman } from '@agent-sandbox/shared/podman';
import { until } from '@agent-sandbox/testkit';
import { nothingLeft, sessionFixture, sessionNeeds } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';
const requirements = sessionNeeds({ images: [image] });

t.test('a running session is listed, entered and stopped', requirements, async (t) => {
  const fx = await sessionFixture(t, 'live');
  const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
  const root = ['--root', fx.root];
  // The agent notes its own cgroup, then sleeps; it ends only when stopped.
  const agent = 'cat /proc/self/cgroup > "$PWD/.agent-cgroup"; touch "$PWD/.running"; exec sleep 600';
  const session = fx.run(['run', ...flags, '--image', image, '--memory', '512m', '--pids', '128', '--agent-bin', '/bin/sh', '--', '-c', agent], { timeoutMs: 180_000 });
  await until('the session runs', () => existsSync(path.join(fx.workspace, '.running')), 90_000);

  await t.test('ps lists it, against its ceilings', async (t) => {
    const table = await fx.run(['ps', ...root]);
    t.equal(table.exitCode, 0, table.stderr);
    const [header, row, ...more] = table.stdout.trim().split('\n');
    t.match(header, /^WORKSPACE +RUNTIME +HOST +UP +MEMORY +PIDS/, 'the table goes to stdout, with a header');
    t.same(more, [], 'one row: the one session');
    t.match(row, new RegExp(`^${fx.id} +codex +local +\\d+s +[0-9.]+[kmg]?/512m +\\d+/128 `), 'its row names the workspace, runtime, host, uptime, memory and pids against --memory and --pids');
    const json = await fx.run(['ps', ...root, '--json']);
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l));
    t.equal(lines.length, 1, '--json: one object per line');
    const s = lines[0];
    t.ok(PsLine(s), `it is an agent-sandbox.ps-line (${JSON.stringify(PsLine.errors ?? [])})`);
    t.equal(s.workspace, fx.id);
    t.ok(s.memory.bytes > 0 && s.memory.limitBytes === 512 * 2 ** 20, `memory now ${s.memory.bytes} of 512m`);
    t.ok(s.pids.current >= 2 && s.pids.current <= 128 && s.pids.limit === 128, `pids now ${s.pids.current} of 128 (tini, the relay, sh's sleep)`);
    t.ok(s.cpu.seconds >= 0 && s.cpu.limit > 0, `cpu ${s.cpu.seconds}s so far`);
    t.ok(s.disk.limitBytes > 0 && s.disk.asOf !== null, 'the disk as its launcher last counted it');
    t.same({ mode: s.egress.mode, reached: s.egress.reached, refused: s.egress.refused }, { mode: 'broker', reached: 0, refused: 0 }, 'egress so far: nothing');
  });

  await runPodman(['stop', '--time', '0', `agent-sandbox-${fx.id}`], { expect: 'any' });
  const ended = await session;
  t.equal(ended.exitCode, 137, 'the session ended');
  t.equal((await fx.run(['ps', ...root, '--json'])).stdout, '', 'then ps lists nothing');
  t.same(await fx.leftovers(), nothingLeft, 'nothing is left');
});

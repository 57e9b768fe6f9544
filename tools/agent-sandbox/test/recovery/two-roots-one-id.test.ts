// Issue 32, finding 9: a session's container, parent cgroup and socket directories are named by
// its workspace id alone, so a second root's workspace of the same id must not start while the
// first runs. Before, its refused start removed and remade the running session's broker
// directory (makeSocketDir), cutting that session's network. Now the id's host-wide lock
// refuses it (92, id-busy) before it touches anything; the running session's broker still
// answers on its socket. The control: once the first session ended, the same start runs.
import t from 'tap';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { jsonLines, sessionRoot, sessionWorkspace, until } from '@agent-sandbox/testkit';
import { canary, nothingLeft, sessionFixture, sessionNeeds, stubAgent } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';

function connects(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ path: socketPath });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

t.test(
  "a second root's session of the same id is refused before it touches the running one",
  sessionNeeds({ images: [image] }),
  async (t) => {
    const a = await sessionFixture(t, 'oneid');
    const flags = a.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
    const sessionA = a.run(
      ['run', ...flags, '--image', image, '--agent-bin', '/bin/sh', '--', '-c', 'touch .running; while :; do sleep 1; done'],
      { timeoutMs: 180_000 },
    );
    await until('session A runs', () => existsSync(path.join(a.workspace, '.running')), 90_000);
    const socket = path.join('/run/agent-sandbox/egress', a.id, 'egress.sock');
    t.ok(await connects(socket), "session A's broker answers on its socket");

    const rootB = await sessionRoot(t, 'launch-oneid-b', { canary });
    const wsB = await sessionWorkspace(t, rootB, 'oneid-b', { id: a.id, copy: { 'stub-agent.sh': stubAgent }, launcherContainer: false });
    const ledgerB = path.join(rootB.base, 'ledger.jsonl');
    const flagsB = [
      '--runtime',
      'codex',
      '--workspace',
      a.id,
      '--root',
      rootB.root,
      '--ledger',
      ledgerB,
      '--agent-bin',
      `${wsB.inside}/stub-agent.sh`,
      '--',
      '0',
      a.hostMarker,
    ];
    const refused = await a.run(['run', ...flagsB]);
    t.equal(refused.exitCode, 92, refused.stderr);
    t.ok(
      refused.stderr.includes(`workspace id ${a.id} is in use on this host by a session from root ${a.root} `),
      'the message names the root whose session holds the id',
    );
    t.match(jsonLines(ledgerB)[0], { outcome: 'refused', exitCode: 92, reason: 'id-busy' });
    t.notOk(existsSync(path.join(wsB.path, '.agent-ran')), "B's agent never ran");
    t.ok(await connects(socket), "session A's broker still answers: B's start did not remake its directory");

    const stop = await a.run(['stop', a.id, '--root', a.root, '--grace', '0']);
    t.equal(stop.exitCode, 0, stop.stderr);
    await sessionA;
    const ran = await a.run(['run', ...flagsB]);
    t.equal(ran.exitCode, 0, `the control: with A ended, the same start runs (${ran.stderr})`);
    t.match(jsonLines(ledgerB)[1], { outcome: 'ran', reason: 'exited' });
    t.same(await a.leftovers(), nothingLeft, 'nothing is left');
  },
);

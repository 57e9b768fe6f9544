// The layer a session wrote over a host cache (--cache, <root>/cache-layers/<id>) does not
// outlive it when its launcher is killed outright: the sentinel removes it with the container,
// and when the sentinel is killed too, the next launcher start's sweep does. The host cache is
// untouched either way, and the poison the session wrote there reaches no later session.
import t from 'tap';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { runPodman, systemPath } from '@agent-sandbox/shared/podman';
import { chownToAgent, sentinelPidsOf, until } from '@agent-sandbox/testkit';
import { nothingLeft, sessionFixture, sessionNeeds } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';
const requirements = sessionNeeds({ images: [image] });
const driver = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'launch-driver.mjs');
const containerExists = async (name: string) => (await runPodman(['container', 'exists', name], { expect: 'any' })).exitCode === 0;

const cases = [
  { killed: 'the launcher', by: 'its sentinel', sentinelToo: false },
  { killed: 'the launcher and its sentinel', by: "the next start's sweep", sentinelToo: true },
];
let ran = 0;
for (const c of cases) {
  t.test(`${c.killed} killed outright: ${c.by} removes the cache layer; the host cache is untouched`, requirements, async (t) => {
    const fx = await sessionFixture(t, `cache-kill-${c.sentinelToo ? 'both' : 'launcher'}`);
    const hostCache = path.join(fx.home, '.npm');
    await mkdir(hostCache);
    await writeFile(path.join(hostCache, 'index'), 'the host cache\n');
    await chownToAgent(hostCache);
    const layers = path.join(fx.root, 'cache-layers', fx.id);
    const script =
      'echo poisoned > "$npm_config_cache/index"; echo poisoned > "$npm_config_cache/poison"; touch "$PWD/.running"; trap "" TERM; sleep 30';
    const options = { runtime: 'codex', workspace: fx.id, root: fx.root, ledger: fx.ledger, image, agentBin: '/bin/sh', cache: 'npm' };
    const child = execa(
      process.execPath,
      [driver, JSON.stringify(options), JSON.stringify(['-c', script]), 'never', path.join(fx.base, 'reached')],
      {
        env: { ...fx.env, PATH: systemPath },
        extendEnv: false,
        reject: false,
      },
    );
    await until('the agent runs', () => existsSync(path.join(fx.workspace, '.running')), 90_000);
    t.same(readdirSync(path.join(layers, 'npm', 'upper')).sort(), ['index', 'poison'], 'the poison is in the layer while the session runs');
    if (c.sentinelToo) {
      const sentinels = sentinelPidsOf(path.join(fx.root, 'sessions', `${fx.id}.json`));
      t.ok(sentinels.length > 0, 'its sentinel runs');
      for (const pid of sentinels) process.kill(pid, 'SIGKILL');
    }
    child.kill('SIGKILL');
    await child;
    const killedAt = Date.now();
    const name = `agent-sandbox-${fx.id}`;
    if (c.sentinelToo) {
      t.ok(existsSync(layers), 'with nothing of the launcher left, the layer is still there');
      const plan = await fx.run(['plan', ...fx.flags], { timeoutMs: 240_000 });
      t.comment(`plan (the next start) returned ${Date.now() - killedAt} ms after the kill, exit ${plan.exitCode}`);
    }
    await until('the container is gone', async () => !(await containerExists(name)), 30_000);
    await until('the layer is gone', () => !existsSync(layers), 30_000);
    t.pass(`${c.by} removed the layer (${Date.now() - killedAt} ms after the kill)`);
    t.equal(readFileSync(path.join(hostCache, 'index'), 'utf8'), 'the host cache\n', 'the host cache is untouched');
    t.notOk(existsSync(path.join(hostCache, 'poison')), 'the poison never reached it');
    await until('the line is written', () => fx.ledgerLines().length > 0, 30_000);
    t.match(fx.ledgerLines()[0], { reason: 'abandoned' }, 'the session is abandoned in the ledger');
    t.same(await fx.leftovers(), nothingLeft, 'nothing else is left');
    ran += 1;
  });
}

t.test('both ways ran', requirements, async (t) => t.equal(ran, cases.length));

// SIGINT/SIGTERM/SIGHUP sent to nnp-probe reach the contained command, on both
// branches, and the status the command chooses on that signal passes through.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { binPath, tempDir } from '@agent-sandbox/testkit';
import { handoffEnv, runDriver } from './fixtures/handoff-env.js';

/** A command that says when it is ready and exits with `status` on `signal`. */
function trapping(signal: string, status: number, ready: string): string[] {
  // The background sleep is killed by the trap and holds no stdio, so nothing outlives the command.
  return ['sh', '-c', `trap 'kill $! 2>/dev/null; exit ${status}' ${signal}; sleep 30 >/dev/null 2>&1 & touch ${ready}; wait`];
}

async function waitFor(file: string): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    try {
      await readFile(file);
      return;
    } catch {
      await sleep(50);
    }
  }
  throw new Error(`${file} never appeared`);
}

const cases: [NodeJS.Signals, string, number][] = [
  ['SIGTERM', 'TERM', 42],
  ['SIGINT', 'INT', 43],
  ['SIGHUP', 'HUP', 44],
];

t.test('direct branch: each forwarded signal reaches the command and its status passes through', async (t) => {
  let ran = 0;
  for (const [signal, name, status] of cases) {
    const dir = await tempDir(t);
    const child = execa(binPath('nnp-probe'), ['exec', '--', ...trapping(name, status, `${dir}/ready`)], {
      reject: false,
      stdin: 'ignore',
    });
    await waitFor(`${dir}/ready`);
    child.kill(signal);
    const r = await child;
    t.equal(r.exitCode, status, `${signal}: ${r.stderr}`);
    ran += 1;
  }
  t.equal(ran, cases.length);
});

t.test(
  'handoff branch: a signal to nnp-probe is delivered to the unit via systemctl kill (stand-in systemd-run and systemctl)',
  async (t) => {
    let ran = 0;
    for (const [signal, name, status] of cases) {
      const h = await handoffEnv(t);
      const child = runDriver(h.env, trapping(name, status, `${h.base}/ready`));
      await waitFor(`${h.base}/ready`);
      child.kill(signal);
      const r = await child;
      t.equal(r.exitCode, status, `${signal}: ${r.stderr}`);
      const calls = (await readFile(`${h.state}/systemctl.log`, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      t.same(calls[0].slice(0, 5), ['--user', 'kill', `--signal=${signal}`, '--kill-whom=all', calls[0][4]]);
      t.match(calls[0][4], /^agent-sandbox-nnp-[0-9a-f]{16}\.service$/);
      ran += 1;
    }
    t.equal(ran, cases.length);
  },
);

// The launcher killed at each step of a session, with SIGKILL and with SIGTERM: the container
// is gone within 5 s (its sentinel stops it), and after the next launcher start (any command;
// here `plan`) nothing of the session is left and the ledger has exactly one line for it.
// The launcher is the real library core in a process of its own (fixtures/launch-driver.mjs),
// stopped at a step by the core's fault hook, which only the library API takes.
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { runPodman, systemPath } from '@agent-sandbox/shared/podman';
import { scratchDirsOf, until } from '@agent-sandbox/testkit';
import { sessionNeeds, nothingLeft, sessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ images: ['localhost/agent-sandbox:latest'] });

const driver = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'launch-driver.mjs');

/** 'running' is not a hook: the agent itself says it runs (a file in its workspace). */
const steps = ['locked', 'staging', 'staged', 'starting', 'started', 'running', 'attributing'] as const;
const signals = ['SIGKILL', 'SIGTERM'] as const;
/** Ctrl-C at the terminal, while the agent runs: the launcher stops the container itself. */
const cases = [
  ...steps.flatMap((step) =>
    signals.map((signal) => ({ step, signal }) as { step: (typeof steps)[number]; signal: 'SIGKILL' | 'SIGTERM' | 'SIGINT' }),
  ),
  { step: 'running' as const, signal: 'SIGINT' as const },
];

const containerExists = async (name: string) => (await runPodman(['container', 'exists', name], { expect: 'any' })).exitCode === 0;

let ran = 0;
for (const { step, signal } of cases) {
  {
    t.test(
      `killed with ${signal} ${step === 'running' ? 'while the agent runs' : `at step "${step}"`}: nothing is left after the next start, and there is one ledger line`,
      requirements,
      async (t) => {
        const fx = await sessionFixture(t, `kill-${step}-${signal.slice(3, 4).toLowerCase()}`);
        const marker = path.join(fx.base, 'reached');
        const running = path.join(fx.workspace, '.running');
        // At "attributing" the agent has ended by itself: it leaves a mark, so the test knows it ran to its end.
        const script = step === 'attributing' ? 'touch "$PWD/.ended"; exit 0' : 'touch "$PWD/.running"; trap "" TERM; sleep 60';
        const options = {
          runtime: 'codex',
          workspace: fx.id,
          root: fx.root,
          ledger: fx.ledger,
          image: 'localhost/agent-sandbox:latest',
          agentBin: '/bin/sh',
        };
        const child = execa(process.execPath, [driver, JSON.stringify(options), JSON.stringify(['-c', script]), step, marker], {
          env: { ...fx.env, PATH: systemPath },
          extendEnv: false,
          reject: false,
        });
        await until(`the launcher reached ${step}`, () => existsSync(step === 'running' ? running : marker), 60_000);
        child.kill(signal);
        const done = await child;
        t.ok(done.exitCode !== 0 || done.signal !== null, `the launcher ended (${done.signal ?? done.exitCode})`);
        const name = `agent-sandbox-${fx.id}`;
        const goneMs = await until('the container is gone', async () => !(await containerExists(name)), 10_000);
        t.ok(goneMs <= 5000, `the container is gone ${goneMs} ms after the launcher died`);
        await fx.run(['plan', ...fx.flags]);
        t.same(await fx.leftovers(), nothingLeft, 'no container, staged or installed copy, lock, record or cgroup');
        t.same(scratchDirsOf(child.pid), [], "no podman working directory of the killed launcher's is left in /tmp");
        const lines = fx.ledgerLines().filter((l) => l.sessionId === fx.id);
        t.equal(lines.length, 1, `exactly one ledger line for the session (${lines.map((l) => l.reason).join(', ')})`);
        // SIGTERM reaches a launcher that can still act (the container is stopped, its own line
        // written: signal, or start-failed when it was still being created); SIGKILL cannot.
        t.ok(['abandoned', 'signal', 'exited', 'start-failed'].includes(lines[0]?.reason), `its reason is ${lines[0]?.reason}`);
        if (step === 'attributing')
          t.ok(existsSync(path.join(fx.workspace, '.ended')), 'the agent had ended by itself before the launcher was killed');
        // A launcher killed outright writes nothing more, at any step (attributing too: it had not
        // written its verdict yet); the line is the sweep's, by the sentinel or the next start.
        if (signal === 'SIGKILL') {
          t.equal(lines[0]?.reason, 'abandoned', 'a launcher killed outright: abandoned');
          t.match(
            lines[0]?.evidence?.cause,
            /sentinel|next launcher start/,
            `written by the sweep (${lines[0]?.evidence?.cause}), not by the launcher`,
          );
        }
        ran += 1;
      },
    );
  }
}

t.test('every step was killed both ways, and Ctrl-C while the agent runs', requirements, async (t) =>
  t.equal(ran, steps.length * signals.length + 1),
);

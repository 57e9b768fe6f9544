// The session's timeout holds without any of our processes (issue 32, finding 10): podman's own
// --timeout, enforced by conmon, carries the session's --timeout plus a margin, so a container
// whose launcher and sentinel were both SIGKILLed is still killed. The control: the same image
// started without --timeout by a plain `podman run` is still running at that moment.
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { runPodman, systemPath } from '@agent-sandbox/shared/podman';
import { binPath, sentinelPidsOf, sleep, until } from '@agent-sandbox/testkit';
import { sessionNeeds, sessionFixture } from '../fixtures/session-fixture.js';

const image = 'localhost/agent-sandbox:latest';
const requirements = sessionNeeds({ images: [image] });
const timeoutSeconds = 10;
/** podmanTimeoutMarginSeconds in session/compose.ts. */
const marginSeconds = 10;

const exists = async (name: string) => (await runPodman(['container', 'exists', name], { expect: 'any' })).exitCode === 0;

t.test(
  `with the launcher and its sentinel both killed, podman's own --timeout ends the container (${timeoutSeconds} s + ${marginSeconds} s)`,
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'backstop');
    const name = `agent-sandbox-${fx.id}`;
    const control = `control-${fx.id}`;
    t.teardown(async () => {
      await runPodman(['rm', '--force', '--ignore', '--time', '0', name, control], { expect: 'any' });
      await fx.run(['plan', ...fx.flags]); // the next start sweeps what the killed launcher left
    });
    const started = Date.now();
    const launcher = execa(
      binPath('agent-sandbox'),
      [
        'run',
        '--runtime',
        'codex',
        '--workspace',
        fx.id,
        '--root',
        fx.root,
        '--ledger',
        fx.ledger,
        '--image',
        image,
        '--timeout',
        `${timeoutSeconds}s`,
        '--agent-bin',
        '/bin/sh',
        '--',
        '-c',
        'touch "$PWD/.running"; trap "" TERM; sleep 120',
      ],
      {
        env: { ...fx.env, PATH: systemPath },
        extendEnv: false,
        reject: false,
        // podman, the launcher's child, outlives it: pipes it inherited would hold the launcher's end until podman's.
        stdio: 'ignore',
      },
    );
    await runPodman([
      'run',
      '-d',
      '--rm',
      '--name',
      control,
      '--network=none',
      '--ulimit=nofile=1024:1024',
      '--ulimit=nproc=1024:1024',
      '--entrypoint',
      '/bin/sleep',
      image,
      '120',
    ]);
    await until('the agent runs', () => existsSync(path.join(fx.workspace, '.running')), 60_000);
    const sentinels = sentinelPidsOf(path.join(fx.root, 'sessions', `${fx.id}.json`));
    t.ok(sentinels.length > 0, `the session has its sentinel (${sentinels.join(', ')})`);
    for (const pid of sentinels) process.kill(pid, 'SIGKILL');
    launcher.kill('SIGKILL');
    await launcher;
    await sleep(500);
    t.ok(await exists(name), 'with nobody of ours left, the container still runs');
    const inspect = await runPodman(['inspect', '--format', '{{.Config.Timeout}}', name], { expect: 'any' });
    t.equal(inspect.stdout.trim(), String(timeoutSeconds + marginSeconds), "podman holds the session's timeout plus the margin");
    await until('the container is gone', async () => !(await exists(name)), (timeoutSeconds + marginSeconds + 30) * 1000);
    const goneAfter = (Date.now() - started) / 1000;
    t.ok(goneAfter <= timeoutSeconds + marginSeconds + 15, `gone ${goneAfter.toFixed(1)} s after the start`);
    t.ok(await exists(control), 'control: the same image without --timeout is still running');
  },
);

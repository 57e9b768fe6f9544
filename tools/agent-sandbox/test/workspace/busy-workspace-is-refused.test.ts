// One session per workspace: while a session runs, a second launcher on its workspace (run,
// exec or kube) is refused with 92 and a message naming the running session, before it stages,
// chowns, cleans or creates anything. The first session's container, credential copies and
// home are untouched, and its agent completes its task.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { sessionNeeds, nothingLeft, sessionFixture } from '../fixtures/session-fixture.js';
import { until } from '@agent-sandbox/testkit';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ images: ['localhost/agent-sandbox:latest', 'localhost/agent-sandbox-agents:latest'] });

t.test('a second launcher on a busy workspace is refused (92) and the running session is untouched', requirements, async (t) => {
  const fx = await sessionFixture(t, 'busy');
  const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
  // The first agent waits for a go, then checks its credential is still installed and intact.
  const agent = [
    'touch "$PWD/.running"',
    'i=0; while [ ! -f "$PWD/.go" ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.1; done',
    'cmp -s /sandbox-secrets/codex/auth.json /sandbox/home/.codex/auth.json && echo credential-intact > "$PWD/.result"',
  ].join('; ');
  const first = fx.run(['run', ...flags, '--image', 'localhost/agent-sandbox:latest', '--agent-bin', '/bin/sh', '--', '-c', agent], {
    timeoutMs: 120_000,
  });
  await until('the first session runs', () => existsSync(path.join(fx.workspace, '.running')), 60_000);
  const installed = path.join(fx.root, 'homes', fx.id, '.codex', 'auth.json');
  const staged = path.join(fx.root, 'secrets', fx.id, 'codex', 'auth.json');
  const before = { installed: statSync(installed).mtimeMs, staged: statSync(staged).mtimeMs };

  for (const mode of ['run', 'exec', 'kube']) {
    const second = await fx.run([mode, ...fx.flags, '--', ...fx.agentArgs(0)]);
    t.equal(second.exitCode, 92, `${mode}: refused with 92 (${second.stderr.trim().split('\n').pop()})`);
    t.match(
      second.stderr + second.stdout,
      new RegExp(
        `workspace ${fx.id} is busy: session ${fx.id} \\(codex\\) started \\d{4}-\\d\\d-\\d\\dT[^ ]+ by root on local, launcher pid \\d+, container agent-sandbox-${fx.id}`,
      ),
      `${mode}: the message names who, since when and which container`,
    );
  }
  t.equal(statSync(installed).mtimeMs, before.installed, "the running session's installed credential is untouched");
  t.equal(statSync(staged).mtimeMs, before.staged, 'and so is its staged copy');
  const ps = await runPodman(['ps', '--filter', `name=^agent-sandbox-${fx.id}$`, '--format', '{{.Status}}'], { expect: 'any' });
  t.match(ps.stdout, /^Up /, 'its container still runs');

  await import('node:fs/promises').then((fs) => fs.writeFile(path.join(fx.workspace, '.go'), ''));
  const out = await first;
  t.equal(out.exitCode, 0, 'the first agent completed its task');
  t.equal(readFileSync(path.join(fx.workspace, '.result'), 'utf8').trim(), 'credential-intact', 'with its credential intact to the end');
  const lines = fx.ledgerLines();
  t.same(
    lines.map((l) => `${l.outcome}:${l.reason}`).sort(),
    ['ran:exited', 'refused:workspace-busy', 'refused:workspace-busy'],
    'one line for the session, one for each refused run and exec',
  );
  t.same(await fx.leftovers(), nothingLeft, 'nothing is left once the session ended');
});

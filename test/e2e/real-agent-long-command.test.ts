// A command that runs longer than Codex's first wait still runs to its end in a session. Codex
// caps exec_command's first wait at 30 s, whatever the model asks, and returns "Process running
// with session ID N"; a model then polls with write_stdin. The scripted model server does the
// same (test/model-server/model-server.mjs), so a project's tests that take over 30 s (they do
// under the VM tier's CPU emulation) are neither cut short nor answered out of order. Shown with
// the real Codex CLI through `agent-sandbox run`: a 40 s command finishes and writes its file,
// and the server polled it once or more before it answered the next step.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { agentArgs, ensureAgentsImage, realSession } from './fixtures/real-agent-session.js';

t.before(ensureAgentsImage);

t.test('codex: a command running past its 30 s first wait is polled to its end, then the next step is answered', async (t) => {
  const s = await realSession(t, {
    runtime: 'codex',
    label: 'long',
    steps: [{ exec: 'sleep 40 && echo ran-to-the-end > long.txt' }, { say: 'done' }],
  });
  const out = await s.run(['run', ...s.launcherFlags, '--', ...agentArgs('codex', 'Run the long command.')]);
  t.equal(out.exitCode, 0, `the agent exited 0\n${out.stderr.slice(-2000)}`);
  t.equal(readFileSync(path.join(s.workspace, 'long.txt'), 'utf8'), 'ran-to-the-end\n', 'the 40 s command ran to its end in the workspace');
  const requests = (await s.server.requests()).filter((r) => r.api === 'responses');
  const kinds = requests.map((r) => r.kind);
  t.equal(kinds[0], 'exec', 'the first request was answered with the command');
  t.ok(kinds.includes('poll'), `codex yielded while it ran and the server polled it (requests: ${kinds.join(', ')})`);
  t.ok(kinds.indexOf('say') > kinds.lastIndexOf('poll'), 'the next step came only after the last poll');
  t.same(
    requests.filter((r) => !r.side).map((r) => r.step),
    [0, 1],
    'each scripted step was answered once, in order',
  );
});

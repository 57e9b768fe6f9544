// What a user sees at the end of `agent-sandbox run`, in real sessions: the last stderr line
// says how the session ended (the exit status and the reason) and, when the broker refused
// anything, which hosts and why; a refused session's last line is its cause. Nothing on the
// terminal is a JSON document.
import t from 'tap';
import { needs } from '@agent-sandbox/testkit';
import { sessionFixture } from '../fixtures/session-fixture.js';

const agentsImage = 'localhost/agent-sandbox-agents:latest';
const requirements = needs({ root: true, podman: true, images: [agentsImage] });
const lastLine = (stderr: string) => stderr.trimEnd().split('\n').at(-1);
/** The fixture's flags without one flag and its value. */
const without = (flags: string[], flag: string) => flags.filter((f, i, all) => f !== flag && all[i - 1] !== flag);

/** Three CONNECTs to a name off the allowlist through the session's relay, then exit 3. */
const connects = `
const net = require('net');
const once = () => new Promise((done) => {
  const s = net.connect(3128, '127.0.0.1', () => s.write('CONNECT blocked.example:443 HTTP/1.1\\r\\nHost: blocked.example:443\\r\\n\\r\\n'));
  s.on('data', (d) => { console.log(String(d).split('\\r\\n')[0]); s.destroy(); });
  s.on('close', done);
  s.on('error', done);
});
(async () => { for (let i = 0; i < 3; i++) await once(); process.exit(3); })();
`;

t.test('a session the broker refused ends with a line naming the host, the count and the rule', requirements, async (t) => {
  const fx = await sessionFixture(t, 'refused');
  const out = await fx.run(['run', ...without(fx.flags, '--agent-bin'), '--agent-bin', 'node', '--', '-e', connects]);
  t.equal(out.exitCode, 3, out.stderr);
  t.match(out.stdout, /^HTTP\/1\.1 403/m, 'the broker answered the agent');
  t.equal(
    lastLine(out.stderr),
    `agent-sandbox: session ${fx.id} ended: exit 3, exited; egress: refused blocked.example x3 (not-allowlisted)`,
  );
  t.match(
    fx.ledgerLines().at(-1),
    { egress: { summary: { refused: [{ host: 'blocked.example', rule: 'not-allowlisted', count: 3 }] } } },
    'the line says what the ledger says',
  );
  t.notMatch(out.stderr, /^\s*[{[]/m, 'no JSON document on stderr');
});

t.test('a session that reached nothing it was refused ends with its status and reason only', requirements, async (t) => {
  const fx = await sessionFixture(t, 'plain');
  const out = await fx.run(['run', ...fx.flags, '--', ...fx.agentArgs(5)]);
  t.equal(out.exitCode, 5, out.stderr);
  t.equal(lastLine(out.stderr), `agent-sandbox: session ${fx.id} ended: exit 5, exited`);
});

t.test('a refused session ends with its cause, after its ledger line is written', requirements, async (t) => {
  const fx = await sessionFixture(t, 'cause');
  const out = await fx.run(['run', ...without(fx.flags, '--workspace'), '--workspace', fx.base, '--', ...fx.agentArgs(0)]);
  t.equal(out.exitCode, 86, out.stderr);
  t.match(lastLine(out.stderr), /^agent-sandbox: /);
  t.equal(lastLine(out.stderr), `agent-sandbox: ${fx.ledgerLines().at(-1).message}`);
});

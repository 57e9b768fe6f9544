// What a node says back is read as another machine's words: its refusal keeps its own code when
// that code and exit are one pair of our table (so a busy node is 92 workspace-busy here too, not
// a generic refusal), anything else is receiver-refused with what it said; and its verdict is used
// only when it is a ledger line.
import t from 'tap';
import { ToolError } from '@agent-sandbox/shared';
import { nodeRefusal, readNodeVerdict, refusalLine, receiverRefusedTag } from '../../dist/dispatch/node-answer.js';

t.test("a node's refusal keeps its code and exit when our table has that pair", async (t) => {
  const line = refusalLine(new ToolError('policy', 'wrong-node', 'request is meant for node a, this node is b; refused'));
  t.ok(line.startsWith(receiverRefusedTag));
  const err = nodeRefusal(JSON.parse(line.slice(receiverRefusedTag.length)) as Record<string, unknown>, 'node1', '');
  t.equal(err.code, 'wrong-node');
  t.equal(err.exitCode, 90);
  t.equal(err.message, 'node1 refused: request is meant for node a, this node is b; refused');
});

t.test('a code we do not have, or one paired with another exit, is receiver-refused', async (t) => {
  t.equal(nodeRefusal({ code: 'made-up', exitCode: 90, message: 'x' }, 'n', '').code, 'receiver-refused');
  t.equal(nodeRefusal({ code: 'wrong-node', exitCode: 80, message: 'x' }, 'n', '').code, 'receiver-refused');
  t.equal(nodeRefusal({ code: 'toString', exitCode: 80, message: 'x' }, 'n', '').code, 'receiver-refused', 'no inherited name passes');
  const old = nodeRefusal(undefined, 'n', 'first\nagent-sandbox: the last line');
  t.equal(old.code, 'receiver-refused');
  t.equal(old.exitCode, 80);
  t.equal(old.message, 'n refused: agent-sandbox: the last line', 'a node without the tagged line: its last line, as before');
});

t.test("the node's message is cut and made safe for a terminal", async (t) => {
  const err = nodeRefusal({ code: 'wrong-node', exitCode: 90, message: `\u001b]0;owned\u0007${'x'.repeat(5000)}` }, 'n', '');
  t.notMatch(err.message, /\u001b/);
  t.ok(err.message.length < 1200, `${err.message.length} characters`);
});

t.test('a verdict is used only when it is a ledger line', async (t) => {
  t.same(readNodeVerdict(undefined), { state: 'missing' });
  const bad = readNodeVerdict({ version: 1, reason: 'exited', exitCode: 'zero' });
  t.equal(bad.state, 'invalid');
  const line = {
    version: 1,
    sessionId: 's',
    runtime: 'shell',
    account: null,
    host: 'node1',
    containment: null,
    image: 'i',
    limits: null,
    startedAt: '2026-01-01T00:00:00Z',
    endedAt: '2026-01-01T00:00:01Z',
    exitCode: 0,
    outcome: 'ran',
    reason: 'exited',
    peak: null,
  };
  t.equal(readNodeVerdict(line).state, 'received');
});

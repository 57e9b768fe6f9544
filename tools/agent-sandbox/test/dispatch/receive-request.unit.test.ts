// What a dispatch node reads first (dispatch/receive-request.ts): each request kind is checked
// against its own schema, a line that is no request is 80, and a request for another node is 90
// before anything else is read. Pure: no ssh, no podman.
import t from 'tap';
import { acceptRequest } from '../../dist/index.js';

const node = 'a'.repeat(32);
const other = 'b'.repeat(32);
const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return 'accepted';
  } catch (err) {
    return `${(err as { exitCode?: number }).exitCode} ${(err as { code?: string }).code}`;
  }
};

t.test('each kind is read by its own schema', async (t) => {
  t.match(
    acceptRequest(JSON.stringify({ version: 1, kind: 'return', nodeMachineId: node, workspaceId: 'w1', runId: '0123456789abcdef' }), node),
    { kind: 'return', runId: '0123456789abcdef' },
  );
  for (const kind of ['ps', 'stop', 'shell'])
    t.match(acceptRequest(JSON.stringify({ version: 1, kind, nodeMachineId: node, workspaceId: 'w1' }), node), { kind }, kind);
  t.equal(
    codeOf(() => acceptRequest(JSON.stringify({ version: 1, kind: 'return', nodeMachineId: node, workspaceId: 'w1' }), node)),
    '80 missing-field',
    'a return request without its runId',
  );
  t.equal(
    codeOf(() => acceptRequest(JSON.stringify({ version: 1, kind: 'ps', nodeMachineId: node, runId: '0123456789abcdef' }), node)),
    '80 unknown-field',
    "a live request with a return request's field",
  );
});

t.test('not a request: 80; meant for another node: 90, whatever its kind', async (t) => {
  t.equal(codeOf(() => acceptRequest('not json', node)).split(' ')[0], '80');
  t.equal(
    codeOf(() => acceptRequest(JSON.stringify({ kind: 'anything' }), node)).split(' ')[0],
    '80',
    'an unknown kind is read as a session request, and is not one',
  );
  for (const doc of [
    { version: 1, kind: 'ps', nodeMachineId: other },
    { version: 1, kind: 'return', nodeMachineId: other, workspaceId: 'w1', runId: '0123456789abcdef' },
  ]) {
    t.equal(
      codeOf(() => acceptRequest(JSON.stringify(doc), node)),
      '90 wrong-node',
      `${doc.kind} for another node`,
    );
  }
});

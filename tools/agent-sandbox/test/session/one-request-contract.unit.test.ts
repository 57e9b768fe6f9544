// One launch request contract (schema agent-sandbox.launch-request), without podman: every flag
// fills a field the schema has, with the schema's kind of value; every request the flags make
// is one the schema holds; the fields that cross ssh are exactly those the two schemas share,
// and a request sent to a node comes back on the node as the same session, with the node's own
// settings for everything else. One builder makes the session's identity.
import t from 'tap';
import { LaunchRequest as LaunchRequestSchema, SessionRequest as SessionRequestSchema } from '@agent-sandbox/shared/schemas/agent-sandbox';
import { LaunchRequest, SessionRequest } from '@agent-sandbox/shared/validators/agent-sandbox';
import { crossingSsh, parseRequest, requestOfSession, sessionFlags, sessionIdentity, sessionRequestOf } from '../../dist/index.js';

const env = { HOME: '/home/u' };
const parse = (flags: Record<string, unknown>, rest: string[] = []) =>
  parseRequest('run', { runtime: 'codex', workspace: 's1', ...flags }, rest, env, ['node', 'agent-sandbox', 'run']);
const properties = (schema: { properties: Record<string, { type?: string; anyOf?: unknown[] }> }) => schema.properties;

t.test('every flag fills a field of the schema, with the kind of value the schema takes', async (t) => {
  const fields = properties(LaunchRequestSchema as never);
  for (const row of sessionFlags) {
    const field = fields[row.field];
    t.ok(field, `--${row.flag} fills ${row.field}, a field of agent-sandbox.launch-request`);
    if (row.field === 'limits') continue;
    if (row.repeatable) t.equal(field!.type, 'array', `--${row.flag} is repeatable: ${row.field} is a list`);
    else if (row.type === 'boolean') t.equal(field!.type, 'boolean', `--${row.flag} is a switch: ${row.field} is a boolean`);
    else t.not(field!.type, 'boolean', `--${row.flag} takes a value`);
  }
  t.equal(new Set(sessionFlags.map((r) => r.flag)).size, sessionFlags.length, 'no flag twice');
});

t.test('a request made from flags is one the schema holds, defaults and all', async (t) => {
  const requests = [
    parse({}),
    parse(
      {
        memory: '1g',
        disk: '2g',
        allowHost: ['registry.npmjs.org'],
        gitRoot: '/srv/repos',
        caFile: '/etc/ca.pem',
        ledger: '/var/log/l.jsonl',
        hosts: '/etc/hosts.json',
        verbose: true,
        allowExpiring: true,
      },
      ['exec', 'x'],
    ),
    parse({ network: 'ns:/run/netns/n', egress: undefined }),
  ];
  for (const r of requests) t.ok(LaunchRequest(r), JSON.stringify(LaunchRequest.errors));
  t.match(requests[1], {
    gitRoots: ['/srv/repos'],
    allowHosts: ['registry.npmjs.org'],
    ledgerFile: '/var/log/l.jsonl',
    logDir: '/var/log/logs',
    registryFile: '/etc/hosts.json',
    registryExplicit: true,
    diskGiven: true,
    agentArgs: ['exec', 'x'],
  });
  t.match(requests[0], {
    registryFile: '/home/u/.config/agent-sandbox/hosts.json',
    registryExplicit: false,
    machineIdFile: '/etc/machine-id',
    selfArgv: ['node', 'agent-sandbox', 'run'],
  });
});

t.test('refusals name the flag and say what was expected, in words', async (t) => {
  const rows: [Record<string, unknown>, RegExp, string][] = [
    [{ runtime: undefined }, /^--runtime: required \(codex, claude, cursor-agent\)$/, 'missing-flag'],
    [{ runtime: 'vim' }, /^--runtime: expected one of codex, claude, cursor-agent, got "vim"$/, 'unknown-runtime'],
    [{ ledger: 'l.jsonl' }, /^--ledger: expected an absolute path, got "l\.jsonl"$/, 'bad-flag'],
    [{ hosts: 'h.json' }, /^--hosts: expected an absolute path/, 'bad-flag'],
    [{ resultFile: 'r' }, /^--result-file: expected an absolute path/, 'bad-flag'],
    [{ caFile: 'ca.pem' }, /^--ca-file: expected an absolute path/, 'bad-flag'],
    [{ image: 'has space' }, /^--image: expected an image name of \[A-Za-z0-9\.\/:@_-\], got "has space"$/, 'bad-flag'],
    [{ workspace: '' }, /^--workspace: expected a workspace id or <root>\/workspaces\/<id>, got ""$/, 'bad-flag'],
    [{ host: ['a', 'b'] }, /^--host: expected one string, got \["a","b"\]$/, 'bad-flag'],
    [{ network: 'host' }, /^--network: expected "none" or "ns:\/run\/netns\/<name>", got "host"$/, 'bad-flag'],
  ];
  for (const [flags, message, code] of rows) t.throws(() => parse(flags), { exitCode: 80, code, message }, JSON.stringify(flags));
  t.equal(rows.length, 10, 'every row ran');
});

t.test('the fields that cross ssh are exactly the ones the launch and session requests share', async (t) => {
  const launch = Object.keys(properties(LaunchRequestSchema as never));
  const session = Object.keys(properties(SessionRequestSchema as never));
  t.same([...crossingSsh].sort(), launch.filter((k) => session.includes(k)).sort());
  const json = (schema: unknown, field: string) => JSON.stringify(properties(schema as never)[field]);
  for (const field of crossingSsh)
    t.equal(json(SessionRequestSchema, field), json(LaunchRequestSchema, field), `${field}: one schema in both`);
});

t.test("a request sent to a node is the same session there, with the node's root, ledger and defaults", async (t) => {
  const local = parse({ account: 'work', memory: '1g', agentBin: '/bin/sh', verbose: true }, ['-c', 'true']);
  const sent = sessionRequestOf(local, 'a'.repeat(32));
  t.ok(SessionRequest(sent), JSON.stringify(SessionRequest.errors));
  t.same(sent, {
    version: 1,
    nodeMachineId: 'a'.repeat(32),
    workspaceId: 's1',
    runtime: 'codex',
    account: 'work',
    limits: local.limits,
    image: local.image,
    agentBin: '/bin/sh',
    agentArgs: ['-c', 'true'],
    verbose: true,
  });
  t.notOk('verbose' in sessionRequestOf(parse({}), 'a'.repeat(32)), 'verbose crosses only when asked for');
  const node = requestOfSession(sent, {
    root: '/srv/node/sandbox',
    ledgerFile: '/srv/node/ledger.jsonl',
    machineIdFile: '/etc/machine-id',
    env: { HOME: '/srv/node' },
  });
  t.ok(LaunchRequest(node));
  for (const field of crossingSsh) t.same(node[field], local[field], `${field} arrives as sent`);
  t.match(node, {
    mode: 'receive',
    workspace: 's1',
    root: '/srv/node/sandbox',
    ledgerFile: '/srv/node/ledger.jsonl',
    logDir: '/srv/node/logs',
    network: 'none',
    egress: 'runtime',
    allowHosts: [],
    gitRoots: [],
    allowExpiring: false,
    diskGiven: true,
    selfArgv: [],
  });
  t.throws(
    () => requestOfSession({ ...sent, image: 'x y' } as never, { root: '/r', ledgerFile: '/l', machineIdFile: '/m', env: {} }),
    { exitCode: 80, message: /^request\.image: expected / },
    'a node names the request field',
  );
});

t.test('one builder makes the identity: from a request, or from what a refusal could read', async (t) => {
  const request = parse({ account: 'work' });
  const id = sessionIdentity(request, 'node1', 'podman-rootful');
  t.match(id, {
    sessionId: 's1',
    runtime: 'codex',
    account: 'work',
    host: 'node1',
    containment: 'podman-rootful',
    image: request.image,
    limits: request.limits,
  });
  t.match(id.runId, /^[0-9a-f]{16}$/);
  t.not(sessionIdentity(request).runId, id.runId, 'a fresh run id each time');
  t.match(sessionIdentity({ workspace: '/r/workspaces/fix-1' }), { sessionId: 'fix-1', host: 'unknown', containment: null, account: null });
  t.match(sessionIdentity({}), { sessionId: 'unknown' });
});

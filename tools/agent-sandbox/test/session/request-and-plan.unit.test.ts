// The launcher's pure parts, without podman: flags become one request (every refusal is 80 and
// names the flag, before anything is staged), and a request with its planned credential and
// mounts composes the one run plan: the agent's command only inside it, behind the egress
// relay, with the proxy variables and git's configuration passed by name.
import t from 'tap';
import { composePlan, parseRequest, type SessionIdentity } from '../../dist/index.js';
import { layoutFor } from '../../dist/workspace/layout.js';
import { egressPlanOf } from '../../dist/egress/broker.js';
import { publishPlanOf } from '../../dist/egress/publish.js';
import { socatRelayPrefix } from '@agent-sandbox/egress-proxy';

const env = { HOME: '/home/u' };
const parse = (flags: Record<string, unknown>, rest: string[] = []) =>
  parseRequest('run', { runtime: 'codex', workspace: 's1', ...flags }, rest, env, []);

t.test('defaults come from HOME and the shared limits', async (t) => {
  const r = parse({});
  t.match(r, {
    runtime: 'codex',
    workspace: 's1',
    root: '/home/u/sandbox',
    egress: 'runtime',
    allowHosts: [],
    network: 'none',
    diskGiven: false,
  });
  t.equal(r.ledgerFile, '/home/u/.local/state/agent-sandbox/ledger.jsonl');
  t.same(r.limits, { memory: '4g', memorySwap: '4g', pids: 512, cpus: 2, cpuShares: 512, disk: '8g', timeout: '2h' });
});

t.test('every bad flag is refused with 80 naming the flag', async (t) => {
  const rows: [Record<string, unknown>, RegExp][] = [
    [{ runtime: undefined }, /^--runtime: required/],
    [{ runtime: 'vim' }, /^--runtime: expected one of codex, claude, cursor-agent/],
    [{ workspace: undefined }, /^--workspace: required/],
    [{ memory: 'lots' }, /^--memory: expected a size/],
    [{ timeout: 'soon' }, /^--timeout: expected a duration/],
    [{ network: 'host' }, /^--network: expected "none" or "ns:\/run\/netns\/<name>"/],
    [{ egress: 'all' }, /^--egress: expected one of runtime, none, got "all"/],
    [{ allowHost: 'http://x' }, /^--allow-host: /],
    [{ allowHost: 'example.com', egress: 'none' }, /--allow-host adds to the broker's allowlist/],
    [{ allowHost: 'example.com', network: 'ns:/run/netns/n' }, /--network ns:\.\.\. joins a namespace you made/],
    [{ root: 'relative' }, /^--root: expected an absolute path/],
    [{ gitRoot: ['/ok', 'rel'] }, /^--git-root: expected an absolute path/],
  ];
  for (const [flags, message] of rows) t.throws(() => parse(flags), { exitCode: 80, message }, JSON.stringify(flags));
});

t.test('limits as typed are kept; --memory alone means no swap', async (t) => {
  t.match(parse({ memory: '1.5g', pids: '64', disk: '1g', timeout: '45m' }).limits, {
    memory: '1.5g',
    memorySwap: '1.5g',
    pids: 64,
    disk: '1g',
    timeout: '45m',
  });
  t.equal(parse({ disk: '1g' }).diskGiven, true);
});

function identity(overrides: Partial<SessionIdentity> = {}): SessionIdentity {
  return {
    runId: '0123456789abcdef',
    sessionId: 's1',
    runtime: 'codex',
    account: 'default',
    host: 'local',
    containment: 'podman-rootful',
    image: 'localhost/agent-sandbox-agents:latest',
    limits: parse({}).limits,
    startedAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

function compose(flags: Record<string, unknown>, rest: string[]) {
  const request = parse(flags, rest);
  const layout = layoutFor('/home/u/sandbox', 's1');
  const credentials = {
    ok: true as const,
    runtime: 'codex',
    identity: { runtime: 'codex', account: 'default', path: '/home/u/.codex/auth.json' },
    expiresAt: null,
    sessionSeconds: 7200,
    expiryOverride: false,
    mounts: [{ source: `${layout.stageDir}/codex/auth.json`, destination: '/sandbox-secrets/codex/auth.json', readOnly: true }],
    stage: [],
    install: [{ from: '/sandbox-secrets/codex/auth.json', to: '/sandbox/home/.codex/auth.json', mode: '0600' }],
  };
  const mounts = {
    ok: true as const,
    workdir: '/sandbox/workspaces/s1',
    home: layout.home,
    git: { kind: 'none' as const },
    gitConfig: [],
    mounts: [
      { source: layout.workspace, destination: '/sandbox/workspaces/s1', readOnly: false },
      { source: layout.home, destination: '/sandbox/home', readOnly: false },
    ],
    env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: '/sandbox/workspaces/s1' },
  };
  const facts = {
    podman: '/usr/bin/podman',
    cgroupMode: 'v1' as const,
    runtime: 'runc',
    rootless: false,
    ulimits: { nofile: 4096, nproc: 4096 },
    seccompProfile: '/x/agent-sandbox.json',
  };
  const egress = egressPlanOf(request, 's1', '0123456789abcdef');
  const publish = publishPlanOf(request.publish, 's1');
  return composePlan({
    request,
    egress,
    publish,
    identity: identity({ limits: request.limits }),
    layout,
    credentials,
    mounts,
    facts,
    env: { TERM: 'xterm', SECRET: 'x' },
    tty: false,
  });
}

t.test('the agent runs beside the egress relay, with the proxy variables and git config by name', async (t) => {
  const plan = compose({}, ['exec', 'fix it']);
  t.same(plan.runPlan.command, [
    ...socatRelayPrefix('/run/sandbox-egress/egress.sock', 3128, plan.identity.limits.pids / 2),
    'codex',
    'exec',
    'fix it',
  ]);
  t.same(plan.runPlan.command!.slice(0, 2), ['/bin/sh', '-c'], 'the relay script starts socat and execs the agent');
  t.same(plan.egress.allow, ['api.openai.com', 'chatgpt.com', 'auth.openai.com'], "the runtime's allowlist");
  t.equal(plan.containerEnv['HTTPS_PROXY'], 'http://127.0.0.1:3128');
  t.equal(plan.containerEnv['NO_PROXY'], 'localhost,127.0.0.1,::1');
  t.ok(
    plan.runPlan.env!.includes('HTTPS_PROXY') && plan.runPlan.env!.includes('GIT_CONFIG_COUNT') && plan.runPlan.env!.includes('TERM'),
    'names only',
  );
  t.notOk(plan.runPlan.env!.includes('SECRET'), "a variable outside the runtime's list does not cross");
  t.ok(
    plan.argv.every((a) => !a.includes('http://127.0.0.1:3128')),
    'no value in the argv: podman takes them by name',
  );
  t.match(
    plan.allMounts.find((m) => m.destination === '/run/sandbox-egress'),
    { readOnly: true, source: /\/agent-sandbox\/egress\/s1$/ },
    'the socket directory, read-only',
  );
  t.equal(plan.runPlan.network, 'none');
  t.ok(
    plan.argv.includes('--network=none') &&
      plan.argv.includes('--cap-drop=ALL') &&
      plan.argv.some((a) => a.startsWith('--security-opt=seccomp=')),
    'the hardening is in the argv',
  );
});

t.test('--egress none: no relay, no socket, no proxy variables; --network ns: likewise', async (t) => {
  for (const flags of [{ egress: 'none' }, { network: 'ns:/run/netns/n' }]) {
    const plan = compose(flags, ['exec']);
    t.same(plan.runPlan.command, ['codex', 'exec'], JSON.stringify(flags));
    t.equal(plan.containerEnv['HTTPS_PROXY'], undefined);
    t.notOk(plan.allMounts.some((m) => m.destination === '/run/sandbox-egress'));
  }
  t.equal(compose({ network: 'ns:/run/netns/n' }, []).runPlan.network, 'ns:/run/netns/n');
});

t.test('--allow-host extends the allowlist; --agent-bin names the binary run inside', async (t) => {
  const plan = compose({ allowHost: ['registry.npmjs.org', '*.example.com:8443'], agentBin: '/bin/sh' }, ['-c', 'true']);
  t.same(plan.egress.allow.slice(-2), ['registry.npmjs.org', '*.example.com:8443']);
  t.same(plan.runPlan.command!.slice(-3), ['/bin/sh', '-c', 'true']);
});

t.test('--publish puts the publish relay in front of the egress relay, with its socket directory and bundle read-only', async (t) => {
  const plan = compose({ publish: ['18437:8080', '3000'] }, ['exec', 'serve']);
  t.same((plan.runPlan.command ?? []).slice(0, 8), [
    'node',
    '/usr/local/lib/agent-sandbox-publish/publish-relay.cjs',
    '--socket',
    '/run/sandbox-publish/publish.sock',
    '--port',
    '8080',
    '--port',
    '3000',
  ]);
  t.same(
    plan.publish.ports,
    [
      { hostPort: 18437, port: 8080 },
      { hostPort: 3000, port: 3000 },
    ],
    'HOSTPORT is PORT when not given',
  );
  const published = plan.allMounts.filter(
    (m) => m.destination.startsWith('/run/sandbox-publish') || m.destination.includes('agent-sandbox-publish'),
  );
  t.equal(published.length, 2);
  t.ok(
    published.every((m) => m.readOnly),
    'the socket directory and the relay are mounted read-only',
  );
});

t.test('--publish refuses what is not [HOSTPORT:]PORT, a port out of range, and a host port given twice', async (t) => {
  for (const entry of [['x'], ['0'], ['70000'], ['1:2:3'], ['8080', '8080:9090']]) {
    t.throws(() => compose({ publish: entry }, []), { exitCode: 80, message: /--publish/ }, JSON.stringify(entry));
  }
});

// The ssh path against a real sshd on 127.0.0.1 (started here with its own keys): a full session
// returns the agent's exit code and writes a ledger line on both sides; NoNewPrivs does not cross
// ssh; the dispatch key gets no shell; a request for another node is refused; a dead sshd is 81;
// the egress flags (--ca-file, --allow-host, --egress, --publish) never cross ssh; a dispatched
// session is listed and stopped through the node's forced command.
import t from 'tap';
import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { binPath, until } from '@agent-sandbox/testkit';
import { launcher, remote } from './fixtures/ssh-node.js';

const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

t.test('a full session over real ssh returns the agent exit code and writes a ledger line', async (t) => {
  const r = await remote(t, 'full');
  const out = await launcher(r, ['run', ...r.flags, '--', '9', r.hostMarker]);
  t.equal(out.exitCode, 9, `${out.stderr}\nsshd: ${r.sshd.log()}`);
  t.match(out.stdout, /stub-agent stdout args=9/, "the agent's stdout crossed ssh");
  t.match(r.marker(), /^pid1=tini uid=1000/, 'it ran in a container on the node');
  t.notOk(existsSync(r.hostMarker), 'not on a host');
  const [local] = lines(r.ledger);
  t.match(local, {
    host: 'node1',
    exitCode: 9,
    outcome: 'ran',
    reason: 'exited',
    containment: 'podman-rootful',
    remote: { via: 'ssh', verdict: 'received' },
  });
  const [node] = lines(r.sshd.nodeLedger);
  t.match(node, { sessionId: r.id, exitCode: 9, outcome: 'ran', remote: { machineId: r.sshd.machineId } }, 'the node wrote its own line');
  t.notMatch(readFileSync(r.ledger, 'utf8'), /sk-canary/, 'no secret in the ledger');
  t.match(r.sshd.log(), /Accepted publickey for root/, 'sshd authenticated the dispatch key');
});

t.test("a dispatched session is listed, entered and stopped through the node's forced command (ps, shell and stop --host)", async (t) => {
  const r = await remote(t, 'live');
  const flags = r.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
  const running = path.join(r.sshd.nodeRoot, 'workspaces', r.id, '.running');
  const session = launcher(r, ['run', ...flags, '--agent-bin', '/bin/sh', '--', '-c', 'touch .running; while :; do sleep 1; done']);
  await until('the dispatched agent runs', () => existsSync(running), 90_000);
  const ps = await launcher(r, ['ps', '--host', 'node1', '--hosts', r.registry, '--json']);
  t.equal(ps.exitCode, 0, ps.stderr);
  const listed = ps.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.match(listed, [{ workspace: r.id, runtime: 'codex' }], "the node's running session, as its receiver read it");
  t.equal(
    (await launcher(r, ['ps', '--root', path.join(r.dir, 'nothing-here'), '--json'])).stdout,
    '',
    'locally (the control): no session runs here',
  );
  const shell = await execa(
    binPath('agent-sandbox'),
    ['shell', r.id, '--host', 'node1', '--hosts', r.registry, '--', 'sh', '-c', 'id -u; cat; exit 5'],
    { env: r.env, extendEnv: false, reject: false, timeout: 120_000, input: 'from the client\n' },
  );
  t.same(
    { exitCode: shell.exitCode, stdout: shell.stdout },
    { exitCode: 5, stdout: '1000\nfrom the client' },
    "shell --host: the command ran in the node's session as the agent, read the client's stdin, and its status came back",
  );
  const stop = await launcher(r, ['stop', r.id, '--host', 'node1', '--hosts', r.registry, '--grace', '1', '--json']);
  t.equal(stop.exitCode, 0, stop.stderr);
  t.match(
    JSON.parse(stop.stdout),
    { ok: true, workspace: r.id, grace: 1, verdict: { reason: 'stopped' } },
    "the node's stop document: its launcher ended it, stopped",
  );
  const ended = await session;
  t.match(
    lines(r.ledger)[0],
    { reason: 'stopped', remote: { via: 'ssh', verdict: 'received' } },
    "the dispatching side's line: stopped, the node's verdict received",
  );
  t.match(
    lines(r.sshd.nodeLedger)[0],
    { shells: { named: [{ command: ['sh', '-c', 'id -u; cat; exit 5'] }] } },
    "the node's line records the shell",
  );
  t.not(ended.exitCode, 0, `the dispatched run ended with the agent's status (${ended.exitCode})`);
  const again = await launcher(r, ['stop', r.id, '--host', 'node1', '--hosts', r.registry]);
  t.equal(again.exitCode, 93, `a second stop: the node's 93 carried back (${again.stderr})`);
  t.match(again.stderr, /node1 refused: .*no session/);
  const unknown = await launcher(r, ['ps', '--host', 'node9', '--hosts', r.registry]);
  t.equal(unknown.exitCode, 81, `a host the registry does not name (${unknown.stderr})`);
});

t.test('under setpriv --no-new-privs locally, the remote side reports NoNewPrivs 0 and needs no re-exec', async (t) => {
  const r = await remote(t, 'nnp');
  const out = await launcher(r, ['run', ...r.flags, '--', '0', r.hostMarker], ['setpriv', '--no-new-privs']);
  t.equal(out.exitCode, 0, out.stderr);
  const [local] = lines(r.ledger);
  t.match(local, { evidence: { noNewPrivs: false, reexec: false } }, 'the node measured NoNewPrivs 0: it does not cross ssh');
  t.notMatch(out.stderr, /systemd-run/, 'no handoff was attempted');
});

t.test('the dispatch key gets no shell: a command asked for is ignored and the receiver refuses non-JSON (80)', async (t) => {
  const r = await remote(t, 'noshell');
  const known = path.join(r.dir, 'known_hosts');
  await writeFile(known, `[127.0.0.1]:${r.sshd.port} ${r.sshd.hostKey}\n`);
  const out = await execa(
    'ssh',
    [
      '-F',
      '/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      `UserKnownHostsFile=${known}`,
      '-o',
      'IdentitiesOnly=yes',
      '-i',
      r.sshd.clientKey,
      '-p',
      String(r.sshd.port),
      'root@127.0.0.1',
      'echo',
      'pwned-$((6*7))',
    ],
    { input: 'id\n', reject: false, timeout: 30_000 },
  );
  t.equal(out.exitCode, 80, out.stderr);
  t.notMatch(out.stdout, /pwned-42|uid=/, 'no command ran');
  t.match(out.stderr, /request: not a JSON document/);
});

t.test('a request meant for another node is refused by the receiver (90)', async (t) => {
  const r = await remote(t, 'wrongnode', (s) => s.registryEntry('node1', 'a'.repeat(32)));
  const out = await launcher(r, ['run', ...r.flags, '--', '0', r.hostMarker]);
  t.equal(out.exitCode, 90, out.stderr);
  t.match(out.stderr, /request is meant for node a{32}, this node is [0-9a-f]{32}; refused/);
  t.equal(r.marker(), undefined, 'nothing ran');
  t.match(lines(r.ledger)[0], { outcome: 'refused', exitCode: 90, reason: 'wrong-node' }, "the node's own code, carried back over ssh");
});

t.test('a dead sshd is unreachable (81)', async (t) => {
  const r = await remote(t, 'dead');
  await r.sshd.stop();
  const out = await launcher(r, ['run', ...r.flags, '--', '0', r.hostMarker]);
  t.equal(out.exitCode, 81, out.stderr);
  t.match(out.stderr, /no agent-seat host answers: node1: 127\.0\.0\.1:\d+ ECONNREFUSED/);
  t.equal(r.marker(), undefined);
  t.match(lines(r.ledger)[0], { outcome: 'refused', exitCode: 81, reason: 'no-host-answers' });
});

t.test('a host key that does not match the pinned one fails before the remote side starts (81)', async (t) => {
  const r = await remote(t, 'badkey', (s) => ({
    ...s.registryEntry(),
    ssh: {
      ...(s.registryEntry().ssh as object),
      hostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBadBadBadBadBadBadBadBadBadBadBadBadBadBadBadBa',
    },
  }));
  const out = await launcher(r, ['run', ...r.flags, '--', '0', r.hostMarker]);
  t.equal(out.exitCode, 81, out.stderr);
  t.match(out.stderr, /ssh to node1 failed before the remote side started: .*(Host key verification failed|REMOTE HOST IDENTIFICATION)/);
  t.equal(r.marker(), undefined);
});

// What a session reaches and trusts is the node's call: these flags never cross ssh.
const localOnly: [string, string[]][] = [
  ['--ca-file', ['--ca-file', '/etc/ssl/certs/ca-certificates.crt']],
  ['--allow-host', ['--allow-host', 'example.com']],
  ['--egress none', ['--egress', 'none']],
  ['--publish', ['--publish', '18080:8080']],
  ['--cache', ['--cache', 'npm']],
];
let localOnlyRows = 0;
for (const [label, flags] of localOnly) {
  t.test(`${label} is refused for a session on another node (80 local-only-flag) before ssh`, async (t) => {
    const r = await remote(t, `local${localOnlyRows}`);
    const out = await launcher(r, ['run', ...r.flags, ...flags, '--', '0', r.hostMarker]);
    t.equal(out.exitCode, 80, out.stderr);
    t.match(
      out.stderr,
      /--network, --egress, --allow-host, --ca-file, --publish, --cache, --allow-expiring and --git-root apply to sessions on this machine only, not on node1/,
    );
    t.equal(r.marker(), undefined, 'nothing ran');
    t.notMatch(r.sshd.log(), /Accepted publickey/, 'ssh was never used');
    localOnlyRows++;
  });
}
t.test('every local-only row ran', async (t) => {
  t.equal(localOnlyRows, localOnly.length);
});

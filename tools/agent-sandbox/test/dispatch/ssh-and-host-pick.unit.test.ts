// Dispatch's pure parts, on real files, a real ssh client and real sockets: the ssh argv says
// every option itself, so nothing in the user's ssh configuration can weaken it (ssh -G, which
// resolves a configuration without connecting, is the judge); the host key is pinned in a
// known_hosts line of its own; the registry is refused as the user wrote it; the host pick runs
// locally only on this machine's id, and names every candidate it passed over.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { tempDir, type Teardown } from '@agent-sandbox/testkit';
import { buildSshArgv, knownHostsLine, loadRegistry, pickHost, seatRole } from '../../dist/index.js';
import { mirrorNameOf } from '../../dist/dispatch/work-bundle.js';

const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
const ssh = { address: '127.0.0.1', port: 2222, user: 'agent', hostKey: key, identityFile: '/keys/id_ed25519' };
const here = 'a'.repeat(32);
const other = 'b'.repeat(32);

/** ssh -G: the configuration ssh would use for these arguments, as lowercase "key value" lines. */
function resolved(args: string[], home: string): Map<string, string> {
  const out = execFileSync('ssh', ['-G', ...args], { env: { HOME: home, PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, encoding: 'utf8' });
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]),
  );
}

t.test(
  'the ssh argv reads no ssh config file, and its own options win over one (control: the same argv told to read a hostile config takes its proxy command)',
  async (t) => {
    const home = await tempDir(t, 'astest-ssh-home-');
    mkdirSync(path.join(home, '.ssh'), { mode: 0o700 });
    const hostileFile = path.join(home, '.ssh', 'config');
    const hostile = [
      'Host *',
      '  ForwardAgent yes',
      '  StrictHostKeyChecking no',
      '  UserKnownHostsFile /tmp/anything',
      '  ProxyCommand sh -c "touch /tmp/pwned"',
      '  LocalCommand touch /tmp/pwned',
      '  PermitLocalCommand yes',
      '',
    ];
    writeFileSync(hostileFile, hostile.join('\n'), { mode: 0o600 });
    const argv = buildSshArgv(ssh, '/run/known_hosts');
    t.equal(argv[0], 'ssh');
    const ours = resolved(argv.slice(1), home);
    t.equal(ours.get('forwardagent'), 'no');
    t.equal(ours.get('stricthostkeychecking'), 'true');
    t.equal(ours.get('userknownhostsfile'), '/run/known_hosts');
    t.equal(ours.get('batchmode'), 'yes');
    t.equal(ours.get('identitiesonly'), 'yes');
    t.equal(ours.get('permitlocalcommand'), 'no');
    t.equal(ours.get('proxycommand'), undefined, 'no proxy command');
    t.equal(ours.get('port'), '2222');
    t.equal(ours.get('user'), 'agent');
    const control = resolved(
      argv.slice(1).map((a, i, all) => (all[i - 1] === '-F' ? hostileFile : a)),
      home,
    );
    t.equal(control.get('proxycommand'), 'sh -c "touch /tmp/pwned"', 'control: told to read the hostile file, ssh takes its proxy command');
    t.equal(control.get('forwardagent'), 'no', "and the argv's own -o options still win over the file's");
    t.equal(control.get('stricthostkeychecking'), 'true');
  },
);

t.test('the host key is pinned in a known_hosts line of its own, with the port when it is not 22', async (t) => {
  t.equal(knownHostsLine(ssh), `[127.0.0.1]:2222 ${key}\n`);
  t.equal(knownHostsLine({ ...ssh, port: 22 }), `127.0.0.1 ${key}\n`);
  t.equal(knownHostsLine({ address: 'node-1', user: 'agent', hostKey: key, identityFile: '/k' }), `node-1 ${key}\n`);
});

t.test(
  'the registry: a missing --hosts file is refused, a missing default means this machine alone, a malformed one names the field',
  async (t) => {
    const dir = await tempDir(t, 'astest-registry-');
    const missing = path.join(dir, 'none.json');
    t.throws(() => loadRegistry(missing, true, here), { code: 'no-registry', exitCode: 80 });
    t.same(loadRegistry(missing, false, here), { version: 1, hosts: [{ name: 'local', roles: [seatRole], machineId: here }] });
    const twice = path.join(dir, 'twice.json');
    writeFileSync(
      twice,
      JSON.stringify({
        version: 1,
        hosts: [
          { name: 'n', roles: [], machineId: here },
          { name: 'n', roles: [], machineId: other },
        ],
      }),
    );
    t.throws(() => loadRegistry(twice, true, here), { code: 'duplicate-host', exitCode: 80 });
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ version: 1, hosts: [{ name: 'n', roles: [], machineId: 'not-an-id' }] }));
    t.throws(() => loadRegistry(bad, true, here), { exitCode: 80, message: /machineId/ });
  },
);

/** A TCP listener on loopback (an ssh port that answers), closed at the end. */
async function listener(t: Teardown): Promise<number> {
  const server: Server = createServer((s) => s.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

t.test(
  'the host pick: local on this machine id only, the first remote seat that answers, 81 naming every candidate when none does',
  async (t) => {
    const open = await listener(t);
    // A port that refuses: listened on, then closed.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const closed = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const seat = (name: string, machineId: string, port?: number) => ({
      name,
      roles: [seatRole],
      machineId,
      ...(port ? { ssh: { ...ssh, port } } : {}),
    });
    const local = await pickHost({ version: 1, hosts: [seat('here', here)] }, { machineId: here });
    t.same([local.host.name, local.local], ['here', true]);
    const remote = await pickHost({ version: 1, hosts: [seat('gone', other), seat('node', other, open)] }, { machineId: here });
    t.same([remote.host.name, remote.local], ['node', false], 'a seat with no ssh entry is passed over, an answering one is picked');
    t.match(remote.skipped, [/^gone: not this machine/]);
    await t.rejects(pickHost({ version: 1, hosts: [{ name: 'db', roles: ['db'], machineId: other }] }, { machineId: here, name: 'db' }), {
      code: 'no-seat-role',
      exitCode: 81,
    });
    await t.rejects(pickHost({ version: 1, hosts: [] }, { machineId: here, name: 'x' }), { code: 'unknown-host', exitCode: 81 });
    await t.rejects(pickHost({ version: 1, hosts: [] }, { machineId: here }), { code: 'no-seat', exitCode: 81 });
    const none = pickHost(
      { version: 1, hosts: [seat('gone', other), seat('down', other, closed)] },
      { machineId: here, probeTimeoutMs: 2000 },
    );
    await t.rejects(none, {
      code: 'no-host-answers',
      exitCode: 81,
      message: new RegExp(`gone: not this machine.*down: 127\\.0\\.0\\.1:${closed} ECONNREFUSED`),
    });
  },
);

t.test("a node's mirror name: the repository's name, made safe, and a hash of where it is", async (t) => {
  t.match(mirrorNameOf('/home/u/app/.git', '/home/u/app'), /^app-[0-9a-f]{12}$/);
  t.not(
    mirrorNameOf('/home/u/app/.git', '/home/u/app'),
    mirrorNameOf('/srv/app/.git', '/srv/app'),
    'two repositories of one name get two mirrors',
  );
  t.match(
    mirrorNameOf('/x/.git', '/x/..evil name;$(rm)'),
    /^evil-name---rm--[0-9a-f]{12}$/,
    'only [A-Za-z0-9._-], starting with a letter or digit',
  );
});

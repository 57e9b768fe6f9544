// `agent-sandbox node-setup` provisions a dispatch node, tested on a throwaway user: the user
// (with a login shell, no password), its root, linger (reported, whatever this machine allows),
// and exactly one authorized_keys line restricting the key to the receiver; a second run changes
// nothing, and an unrestricted line for the same key is replaced. Then a real sshd reading that
// authorized_keys: the key reaches the receiver as that user (a rootless node here, so the
// session is refused with 88: limits unenforceable on cgroup v1) and nothing else.
import t, { type Test } from 'tap';
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { binPath, tempDir } from '@agent-sandbox/testkit';
import { startSshd, type SshdFixture } from './fixtures/sshd-fixture.js';

async function throwawayUser(t: Test): Promise<string> {
  const user = `astest-n${randomBytes(3).toString('hex')}`;
  t.teardown(async () => {
    await execa('userdel', ['--remove', user], { reject: false });
  });
  return user;
}

const setup = (args: string[]) =>
  execa(binPath('agent-sandbox'), ['node-setup', ...args], {
    reject: false,
    env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin', HOME: '/nonexistent' },
    extendEnv: false,
  });

t.test('node-setup makes the user, its root and one restricted key line, says so, and a second run changes nothing', async (t) => {
  const dir = await tempDir(t, 'astest-nodesetup-');
  const user = await throwawayUser(t);
  await execa('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'astest-client', '-f', path.join(dir, 'k')]);
  const pub = readFileSync(path.join(dir, 'k.pub'), 'utf8').trim();
  const out = await setup(['--user', user, '--key', path.join(dir, 'k.pub'), '--bin', '/opt/agent-sandbox/bin/agent-sandbox', '--json']);
  t.equal(out.exitCode, 0, String(out.stderr));
  const doc = JSON.parse(String(out.stdout));
  const pw = String((await execa('getent', ['passwd', user])).stdout).split(':');
  t.equal(pw[6], '/bin/bash', 'a login shell: sshd runs the forced command through it');
  t.equal(String((await execa('getent', ['shadow', user])).stdout).split(':')[1], '*', 'no password, and not locked');
  const home = pw[5]!;
  t.match(doc, { user, home, root: `${home}/sandbox`, authorizedKeys: `${home}/.ssh/authorized_keys` });
  t.equal(statSync(`${home}/sandbox/workspaces`).uid, Number(pw[2]), "the root is the user's");
  const keys = readFileSync(`${home}/.ssh/authorized_keys`, 'utf8');
  t.equal(
    keys,
    `restrict,command="/opt/agent-sandbox/bin/agent-sandbox receive --root ${home}/sandbox" ${pub}\n`,
    'exactly the restricted line',
  );
  t.equal(statSync(`${home}/.ssh/authorized_keys`).mode & 0o777, 0o600);
  t.equal(statSync(`${home}/.ssh`).mode & 0o777, 0o700);
  t.same(
    doc.steps.map((s: any) => s.step),
    ['user', 'root', 'linger', 'subuids', 'key'],
  );
  t.match(
    doc.steps.find((s: any) => s.step === 'linger'),
    { detail: /loginctl enable-linger/ },
    'linger is reported, done or not',
  );
  t.match(String(out.stderr), /^ok   user: .*made$/m);
  t.match(String(out.stderr), /on the client, add to hosts\.json: \{"name":"<name>","roles":\["agent-seat"\],"machineId":"[0-9a-f]{32}"/);
  const again = await setup(['--user', user, '--key', path.join(dir, 'k.pub'), '--bin', '/opt/agent-sandbox/bin/agent-sandbox', '--json']);
  t.equal(again.exitCode, 0);
  t.same(
    JSON.parse(String(again.stdout))
      .steps.filter((s: any) => s.changed)
      .map((s: any) => s.step),
    [],
    'nothing changed the second time',
  );
  t.equal(readFileSync(`${home}/.ssh/authorized_keys`, 'utf8'), keys);
});

t.test('an unrestricted line for the same key is replaced; other keys stay; a bad key is refused (80)', async (t) => {
  const dir = await tempDir(t, 'astest-nodesetup-');
  const user = await throwawayUser(t);
  await execa('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'c', '-f', path.join(dir, 'k')]);
  const pub = readFileSync(path.join(dir, 'k.pub'), 'utf8').trim();
  const file = path.join(dir, 'authorized_keys');
  await writeFile(file, `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherKeyOtherKeyOtherKeyOtherKeyOtherKey other\n${pub}\n`);
  const out = await setup([
    '--user',
    user,
    '--key',
    pub,
    '--bin',
    '/usr/local/bin/agent-sandbox',
    '--root',
    path.join(dir, 'root'),
    '--authorized-keys',
    file,
  ]);
  t.equal(out.exitCode, 0, String(out.stderr));
  t.match(String(out.stderr), /ok   key: replaced the key's line in .* with the restricted one/);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  t.equal(lines.length, 2);
  t.match(lines[0], /other$/, 'the other key stays');
  t.equal(lines[1], `restrict,command="/usr/local/bin/agent-sandbox receive --root ${path.join(dir, 'root')}" ${pub}`);
  const bad = await setup(['--user', user, '--key', 'not a key']);
  t.equal(bad.exitCode, 80);
  t.match(String(bad.stderr), /--key: expected one OpenSSH public key/);
});

/** A real sshd whose authorized_keys for `user` is the one node-setup writes for the client's key. */
function sshdWithNodeSetup(t: Test, dir: string, user: string): Promise<SshdFixture> {
  return startSshd(t, dir, {
    user,
    authorize: async (pubFile) => {
      const file = path.join(dir, 'node-authorized_keys');
      const out = await setup([
        '--user',
        user,
        '--key',
        pubFile,
        '--bin',
        binPath('agent-sandbox'),
        '--authorized-keys',
        file,
        '--machine-id-file',
        path.join(dir, 'node-machine-id'),
      ]);
      if (out.exitCode !== 0) throw new Error(String(out.stderr));
      return file;
    },
  });
}

/** ssh as `user` with the client's key, asking for `command` (what the restricted line must ignore). */
async function sshCommand(dir: string, sshd: SshdFixture, user: string, command: string) {
  const known = path.join(dir, 'known_hosts');
  await writeFile(known, `[127.0.0.1]:${sshd.port} ${sshd.hostKey}\n`);
  const argv = [
    '-F',
    '/dev/null',
    '-o',
    'BatchMode=yes',
    '-o',
    `UserKnownHostsFile=${known}`,
    '-o',
    'IdentitiesOnly=yes',
    '-i',
    sshd.clientKey,
    '-p',
    String(sshd.port),
    `${user}@127.0.0.1`,
    command,
  ];
  return execa('ssh', argv, { input: `${command}\n`, reject: false, timeout: 30_000 });
}

t.test('a real sshd with the line node-setup wrote: the key reaches only the receiver, as that user', async (t) => {
  const dir = await tempDir(t, 'astest-nodesetup-sshd-');
  await chmod(dir, 0o755);
  const user = await throwawayUser(t);
  const sshd = await sshdWithNodeSetup(t, dir, user);
  const registry = path.join(dir, 'hosts.json');
  await writeFile(registry, JSON.stringify({ version: 1, hosts: [sshd.registryEntry()] }));
  await mkdir(path.join(dir, 'local-home'));
  const home = String((await execa('getent', ['passwd', user])).stdout).split(':')[5]!;
  await mkdir(path.join(home, 'sandbox', 'workspaces', 'w1'));
  await execa('chown', [`${user}:`, path.join(home, 'sandbox', 'workspaces', 'w1')]);
  const out = await execa(
    binPath('agent-sandbox'),
    [
      'run',
      '--runtime',
      'codex',
      '--workspace',
      'w1',
      '--host',
      'node1',
      '--hosts',
      registry,
      '--ledger',
      path.join(dir, 'ledger.jsonl'),
      '--agent-bin',
      'true',
    ],
    {
      env: { HOME: path.join(dir, 'local-home'), PATH: '/usr/bin:/bin' },
      extendEnv: false,
      reject: false,
      timeout: 60_000,
    },
  );
  t.match(sshd.log(), new RegExp(`Accepted publickey for ${user}`), 'sshd let the key in as the node user');
  t.equal(out.exitCode, 88, String(out.stderr));
  t.match(
    String(out.stderr),
    /rootless podman \(uid \d+\) on cgroup (hybrid|v1)/,
    "the receiver ran as that user and refused for this machine's reason",
  );
  const shell = await sshCommand(dir, sshd, user, 'id');
  t.equal(shell.exitCode, 80, 'a command asked for is ignored: the receiver refuses what is not a request');
  t.notMatch(String(shell.stdout), /uid=/);
});

// Fail closed, with nothing to switch it off: every variable the launcher and its cores read,
// plus the bypass names an agent would try, plus a fake podman first on PATH and a podman
// config that swaps the OCI runtime for a script. A broken session still refuses, and a
// working one still runs inside the container; the agent never runs on the host.
import t from 'tap';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sessionNeeds, sessionFixture, type SessionFixture } from './fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds();

/** Every variable read by tools/agent-sandbox and the cores it composes (grep of src), and what podman reads. */
const readByCode = [
  'HOME',
  'PATH',
  'XDG_CONFIG_HOME',
  'XDG_STATE_HOME',
  'XDG_DATA_HOME',
  'XDG_RUNTIME_DIR',
  'CODEX_HOME',
  'TERM',
  'COLORTERM',
  'LANG',
  'NO_COLOR',
  'AGENT_SANDBOX_PODMAN',
  'CONTAINERS_CONF',
  'CONTAINERS_STORAGE_CONF',
  'CONTAINER_HOST',
  'CONTAINER_CONNECTION',
];
/** Names an agent might try to restore host execution with. */
const bypassNames = [
  'OD_SANDBOX',
  'OD_LOCAL_DISPATCH_OK',
  'OD_REMOTE_EXEC',
  'CDX_OFFLOAD_STRICT',
  'AGENT_SANDBOX',
  'AGENT_SANDBOX_DISABLE',
  'AGENT_SANDBOX_UNSAFE',
  'AGENT_SANDBOX_FALLBACK',
  'AGENT_SANDBOX_HOST',
  'AGENT_SANDBOX_NO_CONTAINER',
  'AGENT_SANDBOX_STRICT',
  'SANDBOX',
  'NO_SANDBOX',
  'UNSAFE',
  'ALLOW_HOST',
  'RUN_ON_HOST',
  'HOST_FALLBACK',
  'DISABLE_SANDBOX',
  'SANDBOX_RUN_DISABLE',
  'CODEX_UNSAFE',
  'CLAUDE_UNSAFE',
  'DANGEROUSLY_SKIP_PERMISSIONS',
];

/** A hostile environment: fake podman and fake runtime write the host marker and run the command here. */
async function hostileEnv(fx: SessionFixture): Promise<Record<string, string>> {
  const bin = path.join(fx.base, 'evil-bin');
  await mkdir(bin);
  // A fake podman that runs its last argument list on the host; a fake "runc" likewise.
  const fake = `#!/bin/sh\n: > ${fx.hostMarker}\nexit 0\n`;
  for (const name of ['podman', 'runc', 'crun', 'ssh', 'systemd-run']) {
    await writeFile(path.join(bin, name), fake);
    await chmod(path.join(bin, name), 0o755);
  }
  const conf = path.join(fx.base, 'containers.conf');
  await writeFile(conf, `[engine]\nruntime = "runc"\n[engine.runtimes]\nrunc = ["${bin}/runc"]\ncrun = ["${bin}/crun"]\n`);
  await mkdir(path.join(fx.home, '.config', 'containers'), { recursive: true });
  await writeFile(path.join(fx.home, '.config', 'containers', 'containers.conf'), await readFile(conf, 'utf8'));
  const env: Record<string, string> = {};
  for (const name of readByCode) env[name] = '1';
  for (const name of bypassNames) env[name] = '1';
  Object.assign(env, {
    HOME: fx.home,
    PATH: `${bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
    XDG_CONFIG_HOME: path.join(fx.home, '.config'),
    XDG_STATE_HOME: path.join(fx.base, 'state-env'),
    XDG_DATA_HOME: path.join(fx.base, 'data-env'),
    XDG_RUNTIME_DIR: path.join(fx.base, 'run-env'),
    AGENT_SANDBOX_PODMAN: path.join(bin, 'podman'),
    CONTAINERS_CONF: conf,
    CONTAINERS_STORAGE_CONF: path.join(fx.base, 'storage.conf'),
    CONTAINER_HOST: 'unix:///nonexistent/podman.sock',
    CONTAINER_CONNECTION: 'evil',
    CODEX_HOME: path.join(fx.home, '.codex'),
    OD_SANDBOX: '0',
    CDX_OFFLOAD_STRICT: '0',
  });
  return env;
}

t.test(
  'with every variable set and a fake podman and runtime, an absent image still refuses (82) and nothing runs',
  requirements,
  async (t) => {
    const fx = await sessionFixture(t, 'bypass82');
    const env = await hostileEnv(fx);
    const out = await fx.run(['run', ...fx.flags, '--image', 'localhost/astest-absent:none', '--', ...fx.agentArgs(0)], { env });
    t.equal(out.exitCode, 82, out.stderr);
    t.equal(fx.ranInWorkspace(), undefined, 'not in a container');
    t.notOk(fx.ranOnHost(), 'and not on the host (no fake podman or runtime ran)');
    t.equal(fx.ledgerLines()[0].reason, 'image-absent');
  },
);

t.test('with every variable set, a dead host still refuses (81) and nothing runs', requirements, async (t) => {
  const fx = await sessionFixture(t, 'bypass81');
  const env = await hostileEnv(fx);
  const registry = path.join(fx.base, 'hosts.json');
  const ssh = {
    address: '127.0.0.1',
    port: 1,
    user: 'root',
    hostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDeadDeadDeadDeadDeadDeadDeadDeadDeadDeadDeadDead',
    identityFile: '/nonexistent/key',
  };
  await writeFile(
    registry,
    JSON.stringify({ version: 1, hosts: [{ name: 'gone', roles: ['agent-seat'], machineId: 'e'.repeat(32), ssh }] }),
  );
  const out = await fx.run(['run', ...fx.flags, '--hosts', registry, '--', ...fx.agentArgs(0)], { env });
  t.equal(out.exitCode, 81, out.stderr);
  t.equal(fx.ranInWorkspace(), undefined);
  t.notOk(fx.ranOnHost());
});

t.test('with every variable set, a working session still runs inside the container, never through the fakes', requirements, async (t) => {
  const fx = await sessionFixture(t, 'bypass0');
  const env = await hostileEnv(fx);
  const out = await fx.run(['run', ...fx.flags, '--', ...fx.agentArgs(5)], { env });
  t.equal(out.exitCode, 5, out.stderr);
  t.match(fx.ranInWorkspace(), /^pid1=tini uid=1000/, 'ran in the container');
  t.notOk(fx.ranOnHost(), 'the fake podman and the fake runtime never ran');
  t.equal(fx.ledgerLines()[0].containment, 'podman-rootful');
});

t.test('the launcher spawns nothing but podman (via sandbox-run), ssh and its preflight probes', async (t) => {
  // Structural: the agent's argv reaches a process only as the command of the run plan given to
  // sandbox-run. These are the only launcher files that may start a process, and what they start.
  const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');
  const spawning: Record<string, string[]> = {};
  for (const file of (await readdir(src, { recursive: true })).filter((f) => f.endsWith('.ts'))) {
    const text = await readFile(path.join(src, file), 'utf8');
    const starts = [
      ...text.matchAll(/(?<![.\w])(execa|spawn|spawnSync|execFile|execFileSync|exec|execSync|fork|captureCommand)\s*\(\s*([^,)]*)/g),
    ].map((m) => `${m[1]}(${m[2]!.trim()}`);
    if (/from 'node:child_process'|from 'execa'|shared\/capture'/.test(text) || starts.length > 0) spawning[file] = starts;
  }
  t.same(spawning, {
    'disk/usage.ts': ["captureCommand('du'", "spawn('find'"], // the disk ceiling's watchdog counts bytes (du) and names (find) in the workspace, home and git store
    'git/grant.ts': ["spawnSync('setfacl'"], // root mode: ACL entries giving uid 1000 a repository's objects/refs/logs
    'commands/node-setup/provision.ts': ['spawnSync(cmd'], // getent, useradd, loginctl: provisioning a node's user, never a session
    'session/preflight.ts': ["captureCommand('dmesg'"],
    'recovery/sentinel.ts': ["spawn('/bin/sh'"], // waits on a pipe; on the launcher's death runs sentinel-main (cleanup, no agent)
    // (the workspace lock's util-linux flock runs in lib/shared/src/flock.ts)
    'dispatch/ssh.ts': ['execa(bin', 'execa(bin', 'spawn(bin'], // ssh (buildSshArgv): the session's, the one that fetches its commits or asks ps/stop, and shell --host's
  });
  const ssh = await readFile(path.join(src, 'dispatch', 'ssh.ts'), 'utf8');
  t.match(ssh, /const \[bin, \.\.\.args\] = buildSshArgv\(/, 'ssh runs buildSshArgv, whose argv ends at the host address');
  t.match(
    ssh,
    /child\.stdin\?\.write\(`\$\{JSON\.stringify\(request\)\}\\n`\)/,
    'the request crosses as JSON on stdin, never as a command',
  );
  const sentinel = await readFile(path.join(src, 'recovery', 'sentinel.ts'), 'utf8');
  t.match(sentinel, /process\.execPath, sentinelEntry\(\), recordFile, root\]/, "the sentinel only ever execs the launcher's own cleanup");
  t.match(
    sentinel,
    /return freshBundle\(dist, 'sentinel-main'\) \?\? path\.join\(dist, 'sentinel-main\.js'\);/,
    'its entry is sentinel-main, bundled or not',
  );
});

t.teardown(() => {
  for (const f of ['/tmp/as-fake/FAKE-RUNTIME-RAN']) if (existsSync(f)) rmSync(f);
});

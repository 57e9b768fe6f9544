// What the escape suite's attacker aims at on the host, made before the sessions start and
// removed at teardown: a file, a process, a loopback server, an abstract socket, a kernel key.
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { Teardown } from '@agent-sandbox/testkit';
import { addHostKey, listHostKeys, removeHostKeys } from './host-keyring.js';
import { rootful } from './session-kit.js';

/** The pid a run's target name carries, when that run is over (its process is gone): what it left may go. */
function deadRunOf(name: string, prefix: string): boolean {
  const pid = Number(new RegExp(`^${prefix}(\\d+)-[0-9a-f]+$`).exec(name)?.[1]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * What the attacker aims at on the host: a file in /, a process, two sockets, a kernel key.
 * Each name carries this run's pid and a random part, so that runs in other worktrees at the
 * same time keep theirs: only what a run that is over left behind is removed here.
 */
export async function hostTargets(t: Teardown) {
  const hex = `${process.pid}-${randomBytes(6).toString('hex')}`;
  // Root's canary is in the host's /; a rootless launcher's user cannot write there: in its /tmp.
  const canaryDir = rootful ? '/' : os.tmpdir();
  for (const f of readdirSync(canaryDir).filter((n) => deadRunOf(n, 'astest-escape-'))) rmSync(path.join(canaryDir, f), { force: true });
  for (const key of (await listHostKeys('astest-escape-key-')).filter((d) => deadRunOf(d, 'astest-escape-key-'))) await removeHostKeys(key);
  const hostCanary = path.join(canaryDir, `astest-escape-${hex}`);
  await writeFile(hostCanary, `${hostCanary}\n`);
  const hostMarker = `astest-escape-sleep-${hex}`;
  // One process (no shell between): SIGKILL at teardown ends it, and no pipe keeps the file alive.
  const hostSleep = execa('perl', ['-e', 'sleep 600', hostMarker], { reject: false, stdio: 'ignore' });
  const loopback = net.createServer((s) => s.end()).listen({ host: '127.0.0.1', port: 0 });
  const abstractName = `astest-escape-${hex}`;
  const abstract = net.createServer((s) => s.end()).listen(`\0${abstractName}`);
  const hostKey = { description: `astest-escape-key-${hex}`, value: `host-key-canary-${hex}` };
  await addHostKey(hostKey.description, hostKey.value);
  t.teardown(async () => {
    hostSleep.kill('SIGKILL');
    loopback.close();
    abstract.close();
    await rm(hostCanary, { force: true });
    await removeHostKeys(hostKey.description);
  });
  if (!loopback.listening) await new Promise((resolve) => loopback.once('listening', resolve));
  const port = (loopback.address() as net.AddressInfo).port;
  return { hex, hostCanary, hostMarker, hostPid: hostSleep.pid!, port, abstractName, hostKey };
}
export type Targets = Awaited<ReturnType<typeof hostTargets>>;

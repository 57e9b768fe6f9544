/**
 * Real names pointed at the fake internet for one process tree, without touching the host:
 * the command runs in a mount namespace of its own (`unshare --mount --propagation private`)
 * where a temporary hosts file is bind-mounted over /etc/hosts. The launcher's broker resolves
 * with the system resolver (getaddrinfo reads /etc/hosts first), so it finds api.openai.com at
 * the fake internet's address exactly as it would find the real one: no seam in the launcher,
 * nothing an agent could reach. The real /etc/hosts is never written. Needs root.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface HostsEntry {
  address: string;
  names: readonly string[];
}

/** The argv prefix that runs a command with `entries` added to its view of /etc/hosts. */
export async function privateHosts(dir: string, entries: readonly HostsEntry[]): Promise<string[]> {
  const file = path.join(dir, 'hosts');
  const lines = entries.map((e) => `${e.address} ${e.names.join(' ')}`);
  await writeFile(file, `${readFileSync('/etc/hosts', 'utf8').trimEnd()}\n# agent-sandbox test: the fake internet\n${lines.join('\n')}\n`, {
    mode: 0o644,
  });
  // `exec` keeps the pid: the command is the process the caller waits for and signals.
  return [
    'unshare',
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    'mount --bind -- "$1" /etc/hosts && shift && exec "$@"',
    'private-hosts',
    file,
  ];
}

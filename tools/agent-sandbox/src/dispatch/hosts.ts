/**
 * The hosts registry (JSON, schema agent-sandbox.hosts) and the host pick: a host with the
 * `agent-seat` role that answers. A host whose machineId is this machine's runs locally;
 * any other host is reached over ssh. Without a registry file the only host is this one.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { connect } from 'node:net';
import { ToolError, parseJsonDocument, validateDocument } from '@agent-sandbox/shared';
import { HostsRegistry, type HostEntry } from '@agent-sandbox/shared/validators/agent-sandbox-hosts';
import type { LaunchRequest } from '../session/request.js';
import { machineIdFile } from '../paths.js';

export const seatRole = 'agent-seat';
export const localHostName = 'local';

/** This machine's identity (paths.ts machineIdFile), the key the receiver checks requests against. */
export function readMachineId(file = machineIdFile): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new ToolError('unreachable', 'no-machine-id', `cannot read this node's identity from ${file}: ${(err as Error).message}`);
  }
  if (!/^[0-9a-f]{32}$/.test(text)) throw new ToolError('unreachable', 'bad-machine-id', `${file} does not hold a 32-hex-digit machine id`);
  return text;
}

/** The implicit registry when no file exists: this machine as the only agent seat. */
export function implicitRegistry(machineId: string): HostsRegistry {
  return { version: 1, hosts: [{ name: localHostName, roles: [seatRole], machineId }] };
}

/** Reads and validates the registry; an explicit --hosts file that is missing is a usage error. */
export function loadRegistry(file: string, explicit: boolean, machineId: string): HostsRegistry {
  if (!existsSync(file)) {
    if (explicit) throw new ToolError('usage', 'no-registry', `--hosts: ${file} does not exist`);
    return implicitRegistry(machineId);
  }
  const doc = validateDocument(HostsRegistry, parseJsonDocument(readFileSync(file, 'utf8'), file), 'hosts');
  const names = new Set<string>();
  for (const h of doc.hosts) {
    if (names.has(h.name)) throw new ToolError('usage', 'duplicate-host', `hosts: host ${h.name} is listed twice in ${file}`);
    names.add(h.name);
  }
  return doc;
}

export interface PickedHost {
  host: HostEntry;
  local: boolean;
  /** Why each earlier candidate was passed over. */
  skipped: string[];
}

/** Does a TCP connect to the host's ssh port succeed within the timeout? (no auth, no shell) */
export function probeSsh(address: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port });
    const done = (why?: string) => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs} ms`));
    socket.once('connect', () => done(undefined));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

export interface PickOptions {
  name?: string;
  machineId: string;
  probeTimeoutMs?: number;
  onProgress?: (line: string) => void;
}

/**
 * Picks the host: the named one (it must have the agent-seat role), or the first agent seat
 * that answers. This machine always answers; others answer when their ssh port accepts.
 * No answer from any candidate is 81, naming every candidate and why.
 */
export async function pickHost(registry: HostsRegistry, options: PickOptions): Promise<PickedHost> {
  const seats = registry.hosts.filter((h) => h.roles.includes(seatRole));
  let candidates = seats;
  if (options.name !== undefined) {
    const named = registry.hosts.find((h) => h.name === options.name);
    if (!named)
      throw new ToolError(
        'unreachable',
        'unknown-host',
        `--host: no host named ${options.name} in the registry (hosts: ${registry.hosts.map((h) => h.name).join(', ') || 'none'})`,
      );
    if (!named.roles.includes(seatRole))
      throw new ToolError(
        'unreachable',
        'no-seat-role',
        `host ${named.name} does not have the ${seatRole} role (roles: ${named.roles.join(', ') || 'none'})`,
      );
    candidates = [named];
  }
  if (candidates.length === 0) throw new ToolError('unreachable', 'no-seat', `no host in the registry has the ${seatRole} role`);
  const skipped: string[] = [];
  for (const host of candidates) {
    if (host.machineId === options.machineId) return { host, local: true, skipped };
    if (!host.ssh) {
      skipped.push(`${host.name}: not this machine (machine-id differs) and no ssh entry`);
      continue;
    }
    const port = host.ssh.port ?? 22;
    options.onProgress?.(`agent-sandbox: probing ${host.name} (${host.ssh.address}:${port})`);
    const why = await probeSsh(host.ssh.address, port, options.probeTimeoutMs ?? 3000);
    if (why === undefined) return { host, local: false, skipped };
    skipped.push(`${host.name}: ${host.ssh.address}:${port} ${why}`);
  }
  throw new ToolError('unreachable', 'no-host-answers', `no ${seatRole} host answers: ${skipped.join('; ')}`, { skipped });
}

export const hostName = () => os.hostname();

/** Step 3 of a launch: the host the request runs on, read from its registry (81 when no agent seat answers). */
export async function hostFor(
  request: Pick<LaunchRequest, 'host' | 'registryFile' | 'registryExplicit' | 'machineIdFile'>,
  onProgress?: (line: string) => void,
): Promise<PickedHost> {
  const machineId = readMachineId(request.machineIdFile);
  const registry = loadRegistry(request.registryFile, request.registryExplicit, machineId);
  onProgress?.(
    `agent-sandbox: picking a host from ${request.registryExplicit || existsSync(request.registryFile) ? request.registryFile : 'this machine alone (no hosts registry)'}`,
  );
  return await pickHost(registry, { ...(request.host ? { name: request.host } : {}), machineId, ...(onProgress ? { onProgress } : {}) });
}

/** `hosts`: the registry, which host is this machine, and which answer (a TCP connect to ssh). */
import type { CommandSpec } from '@agent-sandbox/shared';
import { runtimeNames } from '@agent-sandbox/shared/runtimes';
import { loadRegistry, probeSsh, readMachineId } from '../dispatch/hosts.js';
import { sweepAbandoned } from '../recovery/sweep.js';
import { defaultRegistryPath, defaultRoot, homeOf } from '../session/request.js';
import { sessionOptionsFor } from './session-flags.js';

export async function hostsReport(registryFile: string, explicit: boolean, machineIdFile: string) {
  const machineId = readMachineId(machineIdFile);
  const registry = loadRegistry(registryFile, explicit, machineId);
  const hosts = [];
  for (const h of registry.hosts) {
    const local = h.machineId === machineId;
    const answer = local ? undefined : h.ssh ? await probeSsh(h.ssh.address, h.ssh.port ?? 22, 3000) : 'no ssh entry';
    hosts.push({ name: h.name, roles: h.roles, machineId: h.machineId, local, answers: local || answer === undefined, ...(answer ? { why: answer } : {}) });
  }
  return { ok: true, registry: registryFile, machineId, hosts, runtimes: runtimeNames };
}

export function hostsCommand(): CommandSpec {
  return {
    name: 'hosts',
    describe: 'list the hosts registry: roles, which is this machine, which answer',
    options: sessionOptionsFor(['hosts']),
    run: async (_i, ctx) => {
      // Any launcher start sweeps what dead sessions left.
      await sweepAbandoned(defaultRoot(homeOf(ctx.env)), ctx.log).catch(() => []);
      const flag = ctx.options['hosts'] as string | undefined;
      return { output: await hostsReport(flag ?? defaultRegistryPath(ctx.env, homeOf(ctx.env)), Boolean(flag), '/etc/machine-id') };
    },
  };
}

/** `hosts`: the registry, which host is this machine, and which answer (a TCP connect to ssh). */
import type { CommandSpec } from '@agent-sandbox/shared';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import { runtimeNames } from '@agent-sandbox/shared/runtimes';
import { HostsOptions, HostsOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { loadRegistry, probeSsh, readMachineId } from '../dispatch/hosts.js';
import { sweepAbandoned } from '../recovery/sweep.js';
import { pathDefaults } from '../paths.js';

export async function hostsReport(registryFile: string, explicit: boolean, machineIdFile: string) {
  const machineId = readMachineId(machineIdFile);
  const registry = loadRegistry(registryFile, explicit, machineId);
  const hosts = [];
  for (const h of registry.hosts) {
    const local = h.machineId === machineId;
    const answer = local ? undefined : h.ssh ? await probeSsh(h.ssh.address, h.ssh.port ?? 22, 3000) : 'no ssh entry';
    hosts.push({
      name: h.name,
      roles: h.roles,
      machineId: h.machineId,
      local,
      answers: local || answer === undefined,
      ...(answer ? { why: answer } : {}),
    });
  }
  return { ok: true, registry: registryFile, machineId, hosts, runtimes: runtimeNames };
}

export function hostsCommand(): CommandSpec {
  return {
    name: 'hosts',
    describe: 'list the hosts registry: roles, which is this machine, which answer',
    options: flagsOf(HostsOptionsSchema),
    run: async (_i, ctx) => {
      const paths = pathDefaults(ctx.env);
      const options = readOptions(HostsOptions, HostsOptionsSchema, ctx.options, { registryFile: paths.registryFile });
      // Any launcher start sweeps what dead sessions left.
      await sweepAbandoned(paths.root, ctx.log).catch(() => []);
      return { output: await hostsReport(options.registryFile, ctx.options['hosts'] !== undefined, options.machineIdFile) };
    },
  };
}

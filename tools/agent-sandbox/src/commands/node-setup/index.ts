/**
 * `agent-sandbox node-setup`: the command's wiring (provision.ts does the work). Each step on
 * stderr as it went, then what the client's hosts registry needs for this node; `--json`
 * prints the document.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import type { CommandSpec } from '@agent-sandbox/shared';
import { flagsOf, readOptions } from '@agent-sandbox/shared/options';
import { NodeSetupOptions, NodeSetupOptionsSchema } from '@agent-sandbox/shared/validators/agent-sandbox-options';
import { machineIdFile as defaultMachineIdFile } from '../../paths.js';
import { nodeSetup } from './provision.js';

function readOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return fallback;
  }
}

/** The launcher path the forced command names: /usr/local/bin/agent-sandbox when that is this launcher (setup's link), else this shim. */
function defaultBin(self: string): string {
  const linked = '/usr/local/bin/agent-sandbox';
  try {
    if (existsSync(linked) && realpathSync(linked) === realpathSync(self)) return linked;
  } catch {
    // not linked
  }
  return self;
}

export function nodeSetupCommand(self: string): CommandSpec {
  return {
    name: 'node-setup',
    describe:
      'provision this machine as a dispatch node (as root): the user, its root, linger, and the forced-command line for a public key',
    options: flagsOf(NodeSetupOptionsSchema),
    examples: [
      ['agent-sandbox node-setup --user agent --key /tmp/dispatch.pub', 'the user agent, ~agent/sandbox, linger, and the restricted key'],
    ],
    run: async (_input, ctx) => {
      const { user, key, root, authorizedKeys, machineIdFile, bin, json } = readOptions(
        NodeSetupOptions,
        NodeSetupOptionsSchema,
        ctx.options,
      );
      const doc = nodeSetup({
        user,
        key,
        bin: bin ?? defaultBin(self),
        ...(root ? { root } : {}),
        ...(authorizedKeys ? { authorizedKeys } : {}),
        ...(machineIdFile ? { machineIdFile } : {}),
      });
      for (const s of doc.steps) ctx.log(`${s.done ? 'ok  ' : 'warn'} ${s.step}: ${s.detail}`);
      ctx.log(`the dispatch key may only run: ${doc.line.slice(0, doc.line.indexOf('" ') + 1)}`);
      const hostKey = readOr('/etc/ssh/ssh_host_ed25519_key.pub', "<this node's host key: ssh-keyscan -t ed25519 ADDRESS>")
        .split(' ')
        .slice(0, 2)
        .join(' ');
      ctx.log(
        `on the client, add to hosts.json: {"name":"<name>","roles":["agent-seat"],"machineId":"${readOr(machineIdFile ?? defaultMachineIdFile, '<cat /etc/machine-id>')}","ssh":{"address":"<address>","user":"${user}","hostKey":"${hostKey}","identityFile":"<the private key>"}}`,
      );
      return json ? { output: doc } : {};
    },
  };
}

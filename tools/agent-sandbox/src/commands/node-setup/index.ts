/**
 * `agent-sandbox node-setup`: the command's wiring (provision.ts does the work). Each step on
 * stderr as it went, then what the client's hosts registry needs for this node; `--json`
 * prints the document.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { ToolError, type CommandSpec } from '@agent-sandbox/shared';
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
    describe: 'provision this machine as a dispatch node (as root): the user, its root, linger, and the forced-command line for a public key',
    options: [
      { flag: 'user', type: 'string', describe: 'the user sessions run as on this node (made when missing)' },
      { flag: 'key', type: 'string', describe: "the dispatching launcher's public key: a .pub file, or its text" },
      { flag: 'root', type: 'string', describe: "the user's permitted root (default <home>/sandbox)" },
      { flag: 'authorized-keys', type: 'string', describe: 'the authorized_keys file to write (default <home>/.ssh/authorized_keys)' },
      { flag: 'bin', type: 'string', describe: 'the agent-sandbox the forced command runs (default /usr/local/bin/agent-sandbox when setup linked it, else this one)' },
      { flag: 'machine-id-file', type: 'string', describe: "passed to the receiver: this node's identity file (default /etc/machine-id)" },
      { flag: 'json', type: 'boolean', describe: 'print the document (JSON) on stdout' },
    ],
    examples: [['agent-sandbox node-setup --user agent --key /tmp/dispatch.pub', 'the user agent, ~agent/sandbox, linger, and the restricted key']],
    run: async (_input, ctx) => {
      const o = ctx.options;
      const str = (k: string) => (typeof o[k] === 'string' && o[k] !== '' ? (o[k] as string) : undefined);
      const user = str('user');
      const key = str('key');
      if (!user || !key) throw new ToolError('usage', 'missing-flag', `node-setup: --user and --key are required`);
      const root = str('root');
      const authorizedKeys = str('authorizedKeys');
      const machineIdFile = str('machineIdFile');
      const doc = nodeSetup({ user, key, bin: str('bin') ?? defaultBin(self), ...(root ? { root } : {}), ...(authorizedKeys ? { authorizedKeys } : {}), ...(machineIdFile ? { machineIdFile } : {}) });
      for (const s of doc.steps) ctx.log(`${s.done ? 'ok  ' : 'warn'} ${s.step}: ${s.detail}`);
      ctx.log(`the dispatch key may only run: ${doc.line.slice(0, doc.line.indexOf('" ') + 1)}`);
      const hostKey = readOr('/etc/ssh/ssh_host_ed25519_key.pub', '<this node\'s host key: ssh-keyscan -t ed25519 ADDRESS>').split(' ').slice(0, 2).join(' ');
      ctx.log(`on the client, add to hosts.json: {"name":"<name>","roles":["agent-seat"],"machineId":"${readOr(machineIdFile ?? '/etc/machine-id', '<cat /etc/machine-id>')}","ssh":{"address":"<address>","user":"${user}","hostKey":"${hostKey}","identityFile":"<the private key>"}}`);
      return o['json'] ? { output: doc } : {};
    },
  };
}

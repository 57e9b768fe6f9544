/**
 * The flags run, exec, plan, kube and doctor share: one row per flag, naming the launch
 * request's field it fills (schema agent-sandbox.launch-request). The commands' options (what
 * yargs reads and `--help` shows) are these rows; a value becomes the request through
 * session/request.ts's one normalisation, and a refusal names the flag of the field it is about.
 */
import { defaultLimits } from '@agent-sandbox/shared/limits';
import { runtimeNames } from '@agent-sandbox/shared/runtimes';
import type { OptionSpec } from '@agent-sandbox/shared';
import { defaultImage, requestOf, type Given, type LaunchRequest, type Mode } from '../session/request.js';

/** One flag and the request field it fills (`limits` for the limit flags, parsed together). */
export interface SessionFlag {
  flag: string;
  field: keyof LaunchRequest;
  type: 'string' | 'boolean';
  describe: string;
  /** Given any number of times: the field is a list. */
  repeatable?: true;
  /** What a value should be, in words, where the schema's own check says it badly. */
  expect?: string;
}

const limit = (flag: string, describe: string): SessionFlag => ({ flag, field: 'limits', type: 'string', describe });

export const sessionFlags: readonly SessionFlag[] = [
  { flag: 'runtime', field: 'runtime', type: 'string', describe: runtimeNames.join(', '), expect: runtimeNames.join(', ') },
  { flag: 'workspace', field: 'workspace', type: 'string', describe: 'workspace id, or its path <root>/workspaces/<id>', expect: 'a workspace id or <root>/workspaces/<id>' },
  { flag: 'host', field: 'host', type: 'string', describe: 'run on this registry host (it must have the agent-seat role)' },
  { flag: 'account', field: 'account', type: 'string', describe: 'credential account name (cred-stage accounts)' },
  limit('memory', `memory limit, e.g. 512m or 4g (default ${defaultLimits.memory})`),
  limit('memory-swap', 'memory+swap limit (default: equal to --memory, no swap)'),
  limit('pids', `process limit (default ${defaultLimits.pids})`),
  limit('cpus', `CPU quota (default ${defaultLimits.cpus})`),
  limit('cpu-shares', `CPU weight (default ${defaultLimits.cpuShares})`),
  limit('disk', `what the session may write to its workspace and home (default ${defaultLimits.disk}, at most half the free space)`),
  limit('timeout', `wall-clock ceiling, e.g. 45m or 2h (default ${defaultLimits.timeout}); the session is stopped with reason timeout`),
  { flag: 'image', field: 'image', type: 'string', describe: `image (default ${defaultImage})`, expect: 'an image name of [A-Za-z0-9./:@_-]' },
  { flag: 'agent-bin', field: 'agentBin', type: 'string', describe: 'binary run INSIDE the container instead of the runtime CLI' },
  { flag: 'network', field: 'network', type: 'string', describe: "the container's network: none (default) or ns:/run/netns/<name> (a namespace you made, e.g. a loopback-only model server)", expect: '"none" or "ns:/run/netns/<name>"' },
  { flag: 'egress', field: 'egress', type: 'string', describe: "runtime (default): the session reaches its runtime's API hosts through the broker, nothing else; none: no network at all" },
  { flag: 'allow-host', field: 'allowHosts', type: 'string', repeatable: true, describe: 'also allow this host[:port] (or *.domain) through the broker; repeatable; local sessions only' },
  { flag: 'ca-file', field: 'caFile', type: 'string', describe: 'PEM certificates the agent also trusts (a TLS proxy that re-signs, a test CA): copied read-only into the session, NODE_EXTRA_CA_CERTS and CODEX_CA_CERTIFICATE set; local sessions only' },
  { flag: 'allow-expiring', field: 'allowExpiring', type: 'boolean', describe: 'stage a credential that expires within the session anyway (recorded in the ledger)' },
  { flag: 'root', field: 'root', type: 'string', describe: 'permitted root (default $HOME/sandbox)' },
  { flag: 'git-root', field: 'gitRoots', type: 'string', repeatable: true, describe: 'also permit git metadata under this directory, mounted at the same path; repeatable; local sessions only' },
  { flag: 'hosts', field: 'registryFile', type: 'string', describe: 'hosts registry (default ${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json)' },
  { flag: 'ledger', field: 'ledgerFile', type: 'string', describe: 'ledger file (default ${XDG_STATE_HOME:-~/.local/state}/agent-sandbox/ledger.jsonl)' },
  { flag: 'result-file', field: 'resultFile', type: 'string', describe: 'also write the verdict JSON here' },
  { flag: 'verbose', field: 'verbose', type: 'boolean', describe: "the launcher's progress and the container entrypoint's own lines on stderr, in words (otherwise they go to the ledger and only the agent shows)" },
];

/** The options the session commands declare (yargs reads them, `--help` shows them). */
export const sessionOptions: OptionSpec[] = sessionFlags.map(({ flag, type, describe }) => ({ flag, type, describe }));

/** Options for a command that takes only some of the session flags. */
export const sessionOptionsFor = (flags: string[]): OptionSpec[] => sessionOptions.filter((o) => flags.includes(o.flag));

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The flags' values (by camelCase name, as the skeleton hands them) as request fields and limits as typed. */
export function givenOf(options: Record<string, unknown>, rest: string[]): Given {
  const given: Given = { fields: { agentArgs: rest }, limits: {} };
  for (const row of sessionFlags) {
    const value = options[camel(row.flag)];
    if (value === undefined || (row.type === 'boolean' && value === false)) continue;
    if (row.field === 'limits') (given.limits as Record<string, unknown>)[camel(row.flag)] = value;
    else (given.fields as Record<string, unknown>)[row.field] = row.repeatable && !Array.isArray(value) ? [value] : value;
  }
  return given;
}

const rowOf = (field: string) => sessionFlags.find((row) => row.field === field);

/** Flags -> the launch request; every refusal is 80 and names the flag. */
export function parseRequest(mode: Mode, options: Record<string, unknown>, rest: string[], env: NodeJS.ProcessEnv, selfArgv: string[]): LaunchRequest {
  return requestOf(mode, givenOf(options, rest), {
    env,
    selfArgv,
    nameOf: (field) => (rowOf(field) ? `--${rowOf(field)!.flag}` : field),
    expectOf: (field) => rowOf(field)?.expect,
  });
}

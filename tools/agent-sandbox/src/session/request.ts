/**
 * The launch request (schema agent-sandbox.launch-request): what a session was asked to be,
 * normalised once, by `requestOf`, whether it came from flags (commands/session-flags.ts) or
 * from a session request a node received over ssh (`requestOfSession`). Defaults come from the
 * launcher's HOME and XDG dirs and from the shared limits; the schema checks every field; the
 * rules across fields follow. The fields that cross ssh are named once (`crossingSsh`), and
 * the session request is made from them (`sessionRequestOf`). Nothing read here can weaken
 * containment: no field selects host execution; agentBin only names the binary run inside the
 * container. Every refusal is 80 and names the flag (or the request field) that caused it.
 */
import os from 'node:os';
import path from 'node:path';
import { ToolError, type ValidationError } from '@agent-sandbox/shared';
import { limitsFrom, type Limits } from '@agent-sandbox/shared/limits';
import { LaunchRequest, type SessionRequest } from '@agent-sandbox/shared/validators/agent-sandbox';
import type { WorkOffer } from '@agent-sandbox/shared/schemas/workspace';
import { parseEntry } from '@agent-sandbox/egress-proxy';
import { defaultLedgerPath } from '../ledger/append.js';

export type { LaunchRequest };

/** run: the agent owns the terminal; exec: output to a log, its path on stdout; receive: the ssh receiver. */
export type Mode = LaunchRequest['mode'];

/** The session image with the real agent CLIs (image/Containerfile.agents). */
export const defaultImage = 'localhost/agent-sandbox-agents:latest';

export function homeOf(env: NodeJS.ProcessEnv): string {
  const home = env['HOME'];
  return home && path.isAbsolute(home) ? home : os.userInfo().homedir;
}

/** Default registry location: ${XDG_CONFIG_HOME:-~/.config}/agent-sandbox/hosts.json (flag --hosts). */
export function defaultRegistryPath(env: NodeJS.ProcessEnv, home: string): string {
  const base = env['XDG_CONFIG_HOME'] && path.isAbsolute(env['XDG_CONFIG_HOME']) ? env['XDG_CONFIG_HOME'] : path.join(home, '.config');
  return path.join(base, 'agent-sandbox', 'hosts.json');
}

/** The default permitted root: $HOME/sandbox (flag --root overrides; no env var does). */
export function defaultRoot(home: string): string {
  return path.join(home, 'sandbox');
}

type Field = keyof LaunchRequest;

/** What was asked, before defaults: request fields as given, and the limits as typed (or, from a node's request, already parsed). */
export interface Given {
  fields: Partial<Record<Exclude<Field, 'limits' | 'mode' | 'selfArgv' | 'diskGiven' | 'registryExplicit' | 'logDir'>, unknown>>;
  limits: Partial<Record<keyof Limits, unknown>> | { parsed: Limits };
}

export interface RequestContext {
  env: NodeJS.ProcessEnv;
  selfArgv: string[];
  /** How a refusal names a field: the flag that fills it, or the request's field. */
  nameOf: (field: string) => string;
  /** What a field's value should have been, in words, where the schema's check says it badly. */
  expectOf?: (field: string) => string | undefined;
}

/** The request's defaults, from HOME and the XDG dirs: what no flag said. */
function defaults(context: RequestContext) {
  const home = homeOf(context.env);
  return {
    root: defaultRoot(home),
    image: defaultImage,
    agentArgs: [] as string[],
    network: 'none',
    allowExpiring: false,
    gitRoots: [] as string[],
    egress: 'runtime',
    allowHosts: [] as string[],
    verbose: false,
    registryFile: defaultRegistryPath(context.env, home),
    ledgerFile: defaultLedgerPath(context.env, home),
    machineIdFile: '/etc/machine-id',
  };
}

/** ajv's first failure as the user's words: `--ledger: expected an absolute path, got "x"`. */
function refusal(errors: ValidationError[], request: Record<string, unknown>, context: RequestContext): ToolError {
  const error = errors.find((e) => e.keyword !== 'anyOf') ?? errors[0];
  const field = (error?.instancePath ?? '').split('/')[1] ?? (error?.params['missingProperty'] as string | undefined) ?? 'request';
  const name = context.nameOf(field);
  const hint = context.expectOf?.(field);
  if (!error || error.keyword === 'required') return new ToolError('usage', 'missing-flag', `${name}: required${hint ? ` (${hint})` : ''}`, { field });
  const value = error.instancePath.split('/').slice(1).reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], request);
  const constants = errors.filter((e) => e.keyword === 'const' && e.instancePath === error.instancePath).map((e) => String(e.params['allowedValue']));
  const expected =
    constants.length > 0
      ? `one of ${constants.join(', ')}`
      : error.keyword === 'pattern' && error.params['pattern'] === '^/'
        ? 'an absolute path'
        : (hint ?? (error.keyword === 'minLength' ? 'a non-empty string' : error.keyword === 'type' ? `one ${String(error.params['type'])}` : (error.message ?? error.keyword)));
  const code = field === 'runtime' && constants.length > 0 ? 'unknown-runtime' : 'bad-flag';
  return new ToolError('usage', code, `${name}: expected ${expected}, got ${JSON.stringify(value)}`, { field });
}

/** The rules across fields: the broker's flags and a namespace of the caller's exclude each other; every --allow-host entry parses. */
function checkRules(request: LaunchRequest, given: Given, context: RequestContext): void {
  for (const entry of request.allowHosts) parseEntry(entry, context.nameOf('allowHosts'));
  if (request.network !== 'none' && (request.allowHosts.length > 0 || given.fields.egress !== undefined)) {
    throw new ToolError('usage', 'bad-flag', '--network ns:... joins a namespace you made: --egress and --allow-host (the broker) do not apply to it');
  }
  if (request.egress === 'none' && request.allowHosts.length > 0) throw new ToolError('usage', 'bad-flag', "--allow-host adds to the broker's allowlist: it does not go with --egress none");
}

/**
 * The one normalisation of a request: the defaults, what was given over them, the limits
 * parsed (the flags' own messages: --memory: expected a size ...), then the schema, then the
 * rules across fields. Throws 80 naming the first bad field; returns a request the schema holds.
 */
export function requestOf(mode: Mode, given: Given, context: RequestContext): LaunchRequest {
  const fields = Object.fromEntries(Object.entries(given.fields).filter(([, v]) => v !== undefined));
  const limits = 'parsed' in given.limits ? (given.limits.parsed as Limits) : limitsFrom(given.limits);
  const request: Record<string, unknown> = { mode, ...defaults(context), ...fields, limits };
  request['diskGiven'] = 'parsed' in given.limits || given.limits.disk !== undefined;
  request['registryExplicit'] = given.fields.registryFile !== undefined;
  request['selfArgv'] = context.selfArgv;
  // Beside the ledger (a ledger that is not an absolute path is refused as itself, before this).
  request['logDir'] = path.join(path.dirname(String(request['ledgerFile'])), 'logs');
  if (!LaunchRequest(request)) throw refusal(LaunchRequest.errors ?? [], request, context);
  checkRules(request, given, context);
  return request;
}

/** The launch request's fields that cross ssh as they are (agent-sandbox.session-request); the node decides the rest. */
export const crossingSsh = ['runtime', 'account', 'limits', 'image', 'agentBin', 'agentArgs', 'verbose'] as const;

/** The session request for a node: the crossing fields, the workspace's id, and the work it carries. */
export function sessionRequestOf(request: LaunchRequest, nodeMachineId: string, work?: WorkOffer): SessionRequest {
  const crossing = Object.fromEntries(crossingSsh.map((k) => [k, request[k]]).filter(([k, v]) => v !== undefined && !(k === 'verbose' && v === false)));
  return { version: 1, nodeMachineId, workspaceId: request.workspace, ...crossing, ...(work ? { work } : {}) } as SessionRequest;
}

/** What a node's receiver takes from its own settings: where its root, ledger and identity are. */
export interface NodeSettings {
  root: string;
  ledgerFile: string;
  machineIdFile: string;
  env: NodeJS.ProcessEnv;
}

/**
 * A node's launch request for a session request it accepted: the crossing fields as sent, the
 * node's own root, ledger and identity, and the defaults for everything else (no network but
 * the node's broker with the runtime's own list, no git roots, no expiring credential).
 */
export function requestOfSession(session: SessionRequest, node: NodeSettings): LaunchRequest {
  const { limits, verbose, ...crossing } = Object.fromEntries(crossingSsh.map((k) => [k, session[k]])) as Pick<SessionRequest, (typeof crossingSsh)[number]>;
  return requestOf(
    'receive',
    { fields: { ...crossing, verbose: verbose === true, workspace: session.workspaceId, root: node.root, ledgerFile: node.ledgerFile, machineIdFile: node.machineIdFile, registryFile: '/dev/null' }, limits: { parsed: limits } },
    { env: node.env, selfArgv: [], nameOf: (field) => `request.${field === 'workspace' ? 'workspaceId' : field}` },
  );
}
